/**
 * The connections the stores accept: an ioredis 5 or 6 `Redis` or `Cluster`,
 * described by what the stores call rather than by class, so the user's own
 * copy of ioredis (whichever major) fits without a second copy or a clash of
 * protected members. Every script touches keys of one hash tag, so a Cluster
 * routes each call to the node that owns it; only walking the keyspace (SCAN)
 * must visit every master, which {@link scanKeys} does.
 */
import { describeValue, ToolReceiptsError } from '../core/errors.js';

/** A Cluster client that answered yet named no master to search. */
export class NoClusterMastersError extends ToolReceiptsError {
  readonly code = 'redis.no_cluster_masters';
  constructor() {
    super('the Redis Cluster client knows no master node, so the keyspace cannot be searched');
  }
}

/**
 * A store or the wrapper was given something other than an ioredis connection
 * as `redis` (often `undefined`, or a node-redis client).
 */
export class InvalidRedisConnectionError extends ToolReceiptsError {
  readonly code = 'redis.invalid_connection';
  constructor(owner: string, got: string) {
    super(`${owner} needs \`redis\`: an ioredis Redis or Cluster (ioredis 5 or 6, e.g. new Redis(url)); got ${got}`);
  }
}

/**
 * `value` when it has what the stores call on a connection; otherwise an
 * {@link InvalidRedisConnectionError} naming `owner` (who was given it).
 */
export function checkedConnection(value: unknown, owner: string): RedisConnection {
  if (typeof value === 'object' && value !== null) {
    const candidate = value as Record<string, unknown>;
    if (typeof candidate['defineCommand'] === 'function' && typeof candidate['pipeline'] === 'function') {
      return value as RedisConnection;
    }
    const nodeRedis = typeof candidate['sendCommand'] === 'function' && 'isOpen' in candidate;
    throw new InvalidRedisConnectionError(owner, nodeRedis ? 'a node-redis client, which is not supported' : 'an object without defineCommand');
  }
  throw new InvalidRedisConnectionError(owner, describeValue(value));
}

/** The pipeline the stores batch script calls on (ioredis `pipeline()`). */
export interface RedisPipeline {
  zrange(key: string, start: number, stop: string): unknown;
  exec(): Promise<[error: Error | null, result: unknown][] | null>;
}

/**
 * What the stores call on a connection: an ioredis `Redis` or `Cluster` (5 or
 * 6) has all of it. Scripts are registered with `defineCommand` and then called
 * as methods of the connection, so ioredis sends EVALSHA and falls back to EVAL.
 */
export interface RedisConnection {
  /** `true` on an ioredis `Cluster`. */
  readonly isCluster: boolean;
  /** ioredis' connection state; `ready` once commands go straight out. */
  readonly status: string;
  defineCommand(name: string, definition: { lua: string; numberOfKeys?: number }): void;
  pipeline(): RedisPipeline;
  ping(): Promise<unknown>;
  // ioredis 6 types `stop` as a string: pass '-1', not -1.
  zrange(key: string, start: number, stop: string): Promise<string[]>;
  zrange(key: string, start: number, stop: string, withScores: 'WITHSCORES'): Promise<string[]>;
  zadd(key: string, mode: 'NX', score: number, member: string): Promise<unknown>;
  zrem(key: string, ...members: string[]): Promise<unknown>;
  /** The server clock, `[seconds, microseconds]`. */
  time(): Promise<unknown>;
  hmget(key: string, ...fields: string[]): Promise<(string | null)[]>;
  hscan(key: string, cursor: string, matchToken: 'MATCH', pattern: string, countToken: 'COUNT', count: number): Promise<[cursor: string, elements: string[]]>;
  scan(cursor: string, matchToken: 'MATCH', pattern: string, countToken: 'COUNT', count: number): Promise<[cursor: string, elements: string[]]>;
  /** Any command by name: the durability waits (`WAIT`, `WAITAOF`) and the doctor's reads. */
  call(command: string, ...args: (string | number)[]): Promise<unknown>;
  info(): Promise<string>;
  /** Counts dropped connections, so a write is not taken as acknowledged across a reconnect. */
  on(event: 'close', listener: () => void): unknown;
}

/** One server's connection as a Cluster lists it: it also knows its address. */
export interface RedisNodeConnection extends RedisConnection {
  readonly options: { readonly host?: string; readonly port?: number };
}

/** A Cluster connection: it can also name its masters and the owners of each slot. */
export interface RedisClusterConnection extends RedisConnection {
  /** Per slot, the `host:port` of the nodes serving it, master first. */
  readonly slots: readonly (readonly string[])[];
  nodes(role: 'master'): RedisNodeConnection[];
}

/** True for an ioredis `Cluster` (checked by behaviour, so any copy of ioredis agrees). */
export function isCluster(connection: RedisConnection): connection is RedisClusterConnection {
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
async function masters(cluster: RedisClusterConnection): Promise<RedisConnection[]> {
  if (cluster.status !== 'ready') await cluster.ping();
  const found = cluster.nodes('master');
  if (found.length === 0) throw new NoClusterMastersError();
  return found;
}
