/**
 * The connections the stores accept: one ioredis `Redis`, or an ioredis
 * `Cluster`. Every script touches keys of one hash tag, so a Cluster routes
 * each call to the node that owns it; only walking the keyspace (SCAN) must
 * visit every master, which {@link scanKeys} does.
 */
import type { Cluster, Redis } from 'ioredis';
import { ToolReceiptsError } from '../core/errors.js';

/** A Cluster client that answered yet named no master to search. */
export class NoClusterMastersError extends ToolReceiptsError {
  readonly code = 'redis.no_cluster_masters';
  constructor() {
    super('the Redis Cluster client knows no master node, so the keyspace cannot be searched');
  }
}

/** A single Redis connection or a Redis Cluster client. */
export type RedisConnection = Redis | Cluster;

/** True for an ioredis `Cluster` (checked by behaviour, so two copies of ioredis agree). */
export function isCluster(connection: RedisConnection): connection is Cluster {
  return (connection as { isCluster?: unknown }).isCluster === true;
}

/**
 * Yields the keys matching `pattern`, one SCAN batch at a time, from the one
 * server of a `Redis` or from every master of a `Cluster` in turn. SCAN may
 * return a key twice; callers that must not see one twice keep a set.
 */
export async function* scanKeys(connection: RedisConnection, pattern: string, count: number): AsyncGenerator<string[]> {
  for (const server of isCluster(connection) ? await masters(connection) : [connection]) {
    let cursor = '0';
    do {
      const [next, keys] = await server.scan(cursor, 'MATCH', pattern, 'COUNT', count);
      cursor = next;
      if (keys.length > 0) yield keys;
    } while (cursor !== '0');
  }
}

/**
 * The masters of a Cluster. A new client learns its nodes asynchronously, and
 * an empty list would read as "no keys": a routed command waits until the
 * client is ready (or fails as any command would), and an empty list is an error.
 */
async function masters(cluster: Cluster): Promise<Redis[]> {
  if (cluster.status !== 'ready') await cluster.ping();
  const found = cluster.nodes('master');
  if (found.length === 0) throw new NoClusterMastersError();
  return found;
}
