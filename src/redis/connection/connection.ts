/**
 * The connections the stores accept: an ioredis 5 or 6 `Redis` or `Cluster`,
 * or a node-redis 5 or 6 client from `createClient`, `createCluster` or
 * `createSentinel`. Each is wrapped once in the adapter for its client (see
 * `./clients/`), and everything above talks to the one
 * {@link ReceiptsConnection} interface. Every script touches keys of one hash
 * tag, so a Cluster routes each call to the node that owns it; only walking
 * the keyspace (SCAN) must visit every master, which {@link scanKeys} does.
 */
import { describeValue, ToolReceiptsError } from '../../core/errors.js';
import { ioredisConnection, looksLikeIoredis, type IoredisClient } from './clients/ioredis.js';
import { isNodeRedisPool, looksLikeNodeRedis, nodeRedisConnection, type NodeRedisClient } from './clients/node-redis.js';
import { adapterFor, isReceiptsConnection, type ReceiptsConnection } from './clients/types.js';

export type {
  ReceiptsConnection,
  ReceiptsNode,
  LuaScript,
  ScriptFunction,
  BatchEntry,
  BatchReply,
  RedisArg,
  RedisClientKind,
} from './clients/types.js';
export type { IoredisClient } from './clients/ioredis.js';
export type { NodeRedisClient } from './clients/node-redis.js';

/**
 * What `redis:` accepts: an ioredis `Redis` or `Cluster` (5 or 6), a
 * connected node-redis client, cluster or Sentinel client (redis 5 or 6), or
 * a {@link ReceiptsConnection} the library already made from one.
 */
export type RedisConnection = IoredisClient | NodeRedisClient | ReceiptsConnection;

/** A Cluster client that answered yet named no master to search. */
export class NoClusterMastersError extends ToolReceiptsError {
  readonly code = 'redis.no_cluster_masters';
  constructor() {
    super('the Redis Cluster client knows no master node, so the keyspace cannot be searched');
  }
}

const ACCEPTED =
  'an ioredis Redis or Cluster (ioredis 5 or 6, e.g. new Redis(url)) or a connected node-redis client ' +
  '(redis 5 or 6: createClient, createCluster or createSentinel)';

/**
 * A store or the wrapper was given something other than a Redis client it
 * can use as `redis` (often `undefined`, or some other object).
 */
export class InvalidRedisConnectionError extends ToolReceiptsError {
  readonly code = 'redis.invalid_connection';
  constructor(owner: string, got: string) {
    super(`${owner} needs \`redis\`: ${ACCEPTED}; got ${got}`);
  }
}

const adapters = new WeakMap<object, ReceiptsConnection>();

/**
 * The {@link ReceiptsConnection} for `value`: the same adapter every time for
 * the same client (and `deadlineMs`: see {@link ReceiptsConnection.deadlineMs};
 * without it, an adapter handed in keeps its own). Throws
 * {@link InvalidRedisConnectionError} naming `owner` (who was given it) when
 * `value` is not a client the library accepts, or is one that will never
 * connect by itself: a node-redis client that is not open (never
 * connected, or closed) or an ioredis client that was closed; or an ioredis
 * client with a `keyPrefix`, which would prefix some of the keyspace's keys
 * and not others. An ioredis
 * client not yet connected (`lazyConnect`) is accepted: it connects on its
 * first command.
 */
export function checkedConnection(value: unknown, owner: string, deadlineMs?: number): ReceiptsConnection {
  const connection = adapterOf(value, owner);
  const closed = closedClient(value as object);
  if (closed !== undefined) throw new InvalidRedisConnectionError(owner, closed);
  return deadlineMs === undefined ? connection : connection.withDeadline(deadlineMs);
}

/**
 * What is wrong with a client that cannot send anything until its owner
 * opens it again, or `undefined`. node-redis never connects by itself, and
 * rejects every command until `connect()`; a closed ioredis client (status
 * `end`) rejects every command until `connect()` too. Refused when the store
 * is made, so no call fails later as if Redis had gone away.
 */
function closedClient(value: object): string | undefined {
  if (isReceiptsConnection(value)) return undefined;
  if (looksLikeIoredis(value)) {
    if (value.status === 'end') return 'an ioredis client that was closed (status end): call connect() on it again, or make a new one';
    // ioredis prefixes the keys it knows are keys, not a SCAN's pattern or a key held in an argument: half the
    // keyspace would be found under one name and written under another (a session's offloaded results would
    // outlive its erasure, reported done). The `prefix` option is the one way to name the keyspace.
    const keyPrefix = (value as { options?: { keyPrefix?: unknown } }).options?.keyPrefix;
    return typeof keyPrefix === 'string' && keyPrefix !== ''
      ? `an ioredis client with keyPrefix ${JSON.stringify(keyPrefix)}: use a client without it, and the \`prefix\` option to name the keyspace`
      : undefined;
  }
  if (looksLikeNodeRedis(value) && value.isOpen !== true) {
    return 'a node-redis client that is not open (never connected, or closed): call `await client.connect()` before handing it over; node-redis does not connect by itself';
  }
  return undefined;
}

function adapterOf(value: unknown, owner: string): ReceiptsConnection {
  if (typeof value !== 'object' || value === null) throw new InvalidRedisConnectionError(owner, describeValue(value));
  if (isReceiptsConnection(value)) return value;
  return adapterFor(adapters, value, () => {
    if (looksLikeIoredis(value)) return ioredisConnection(value);
    if (isNodeRedisPool(value)) {
      throw new InvalidRedisConnectionError(
        owner,
        'a node-redis client pool, whose commands may go out on different connections (WAIT needs the one that wrote)',
      );
    }
    if (looksLikeNodeRedis(value)) return nodeRedisConnection(value);
    throw new InvalidRedisConnectionError(
      owner,
      'an object without the methods of an ioredis client (defineCommand, pipeline, on) or of a node-redis one (sendCommand)',
    );
  });
}

/**
 * The adapter for a connection the library was given (see
 * {@link checkedConnection}, which checked it when it was given: a client
 * closed since then is not refused here, its commands fail as never sent).
 */
export function receiptsConnection(value: RedisConnection): ReceiptsConnection {
  return adapterOf(value, 'the receipts connection');
}

/** True for a Cluster connection. */
export function isCluster(connection: RedisConnection): boolean {
  return receiptsConnection(connection).isCluster;
}

/**
 * Yields the keys matching `pattern`, one SCAN batch at a time, from the one
 * server of a single node or from every master of a Cluster in turn. SCAN
 * may return a key twice; callers that must not see one twice keep a set.
 * An empty list of masters would read as "no keys", so it is an error.
 */
export async function* scanKeys(connection: RedisConnection, pattern: string, count: number): AsyncGenerator<string[]> {
  const servers = await receiptsConnection(connection).masters();
  if (servers.length === 0) throw new NoClusterMastersError();
  for (const server of servers) {
    let cursor = '0';
    do {
      const [next, keys] = (await server.command('SCAN', [cursor, 'MATCH', pattern, 'COUNT', count])) as [string, string[]];
      cursor = String(next);
      if (keys.length > 0) yield keys;
    } while (cursor !== '0');
  }
}
