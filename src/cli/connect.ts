/**
 * The CLI's connection: the same flags whatever client is installed. It uses
 * ioredis when the app has it and node-redis (`redis`) otherwise;
 * `TOOL_RECEIPTS_CLIENT=ioredis|node-redis` picks one. Either way the
 * connection fails fast: no reconnect loop, no queueing while down.
 */
import { maskedUrl } from '../core/errors.js';
import type { RedisConnection } from '../redis/connection/connection.js';
import { CliUsageError, RedisUnavailableError } from './errors.js';

/** Where the CLI connects: one URL (a server or a Cluster node), or a master found through sentinels. */
export interface Target {
  readonly url: string;
  readonly cluster: boolean;
  readonly sentinel?: { readonly sentinels: { host: string; port: number }[]; readonly name: string };
}

/** A connection, not yet open, and how to open and close it. */
export interface CliConnection {
  readonly redis: RedisConnection;
  /** Connects; a server that cannot be reached is a {@link RedisUnavailableError} naming `where`. */
  open(where: string): Promise<void>;
  close(): Promise<void>;
}

/** Redis URL used when neither `--redis` nor `REDIS_URL` gives one. */
export const DEFAULT_REDIS_URL = 'redis://127.0.0.1:6379';

/** The URL, when it is a redis:// or rediss:// one; else a {@link CliUsageError} saying what to write. */
export function checkedUrl(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new CliUsageError(`--redis (or REDIS_URL) is not a URL: ${JSON.stringify(url)}; write redis://host:port`);
  }
  if (parsed.protocol !== 'redis:' && parsed.protocol !== 'rediss:') {
    throw new CliUsageError(`--redis (or REDIS_URL) must be a redis:// or rediss:// URL, got ${maskedUrl(url)}`);
  }
  return url;
}

type Client = 'ioredis' | 'node-redis';

/** Loads a module by name, or `undefined` when it is not installed. */
async function optional<T>(name: string): Promise<T | undefined> {
  try {
    return (await import(name)) as T;
  } catch (error) {
    if ((error as { code?: string }).code === 'ERR_MODULE_NOT_FOUND') return undefined;
    throw error;
  }
}

function credentials(url: string): { username?: string; password?: string } {
  const { username, password } = new URL(url);
  return {
    ...(username ? { username: decodeURIComponent(username) } : {}),
    ...(password ? { password: decodeURIComponent(password) } : {}),
  };
}

const CONNECT_TIMEOUT_MS = 5_000;

function ioredisConnection(ioredis: typeof import('ioredis'), { url, cluster, sentinel }: Target): CliConnection {
  const { Cluster, Redis } = ioredis;
  const failFast = {
    lazyConnect: true,
    connectTimeout: CONNECT_TIMEOUT_MS,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
    enableOfflineQueue: false,
  } as const;
  let redis: InstanceType<typeof Redis> | InstanceType<typeof Cluster>;
  if (sentinel) redis = new Redis({ ...failFast, ...sentinel, sentinelRetryStrategy: () => null, ...credentials(url) });
  else if (!cluster) redis = new Redis(url, failFast);
  else {
    const { hostname, port } = new URL(url);
    redis = new Cluster([{ host: hostname, port: Number(port || 6379) }], {
      lazyConnect: true,
      enableOfflineQueue: false,
      clusterRetryStrategy: () => null,
      redisOptions: { connectTimeout: CONNECT_TIMEOUT_MS, maxRetriesPerRequest: 0, ...credentials(url) },
    });
  }
  const connection = redis;
  const close = async () => {
    if (connection.status === 'ready') await connection.quit().catch(() => connection.disconnect());
    else connection.disconnect();
  };
  let lastError: Error | undefined;
  connection.on('error', (err: Error) => {
    lastError = err;
  });
  const open = async (where: string) => {
    try {
      await connection.connect();
    } catch (err) {
      const cause = lastError ?? err;
      throw new RedisUnavailableError(where, cause instanceof Error ? cause.message : String(cause), cause);
    }
  };
  return { redis: connection as unknown as RedisConnection, open, close };
}

function nodeRedisConnection(nodeRedis: typeof import('redis'), { url, cluster, sentinel }: Target): CliConnection {
  const socket = { connectTimeout: CONNECT_TIMEOUT_MS, reconnectStrategy: false as const };
  const client = sentinel
    ? nodeRedis.createSentinel({
        name: sentinel.name,
        sentinelRootNodes: sentinel.sentinels,
        nodeClientOptions: { socket, ...credentials(url) },
      })
    : cluster
      ? nodeRedis.createCluster({ rootNodes: [{ url }], defaults: { socket, ...credentials(url) } })
      : nodeRedis.createClient({ url, socket, disableOfflineQueue: true });
  let lastError: unknown;
  client.on('error', (err: unknown) => {
    lastError = err;
  });
  let opened = false;
  const destroy = async () => {
    await Promise.resolve(client.destroy()).catch(() => undefined);
  };
  const open = async (where: string) => {
    try {
      await client.connect();
      opened = true;
    } catch (err) {
      const cause = lastError ?? err;
      throw new RedisUnavailableError(where, cause instanceof Error ? cause.message : String(cause), cause);
    }
  };
  const close = async () => {
    if (opened) await Promise.resolve(client.close()).catch(destroy);
    else await destroy();
  };
  return { redis: client as unknown as RedisConnection, open, close };
}

/**
 * The CLI's connection to `target`, not yet open: ioredis when it is
 * installed, else node-redis (or the one `TOOL_RECEIPTS_CLIENT` names).
 */
export async function cliConnection(target: Target, env: Readonly<Record<string, string | undefined>>): Promise<CliConnection> {
  const asked = env['TOOL_RECEIPTS_CLIENT'];
  if (asked !== undefined && asked !== 'ioredis' && asked !== 'node-redis') {
    throw new CliUsageError(`TOOL_RECEIPTS_CLIENT must be ioredis or node-redis, got ${JSON.stringify(asked)}`);
  }
  const order: Client[] = asked === 'node-redis' ? ['node-redis'] : asked === 'ioredis' ? ['ioredis'] : ['ioredis', 'node-redis'];
  for (const client of order) {
    if (client === 'ioredis') {
      const ioredis = await optional<typeof import('ioredis')>('ioredis');
      if (ioredis) return ioredisConnection(ioredis, target);
    } else {
      const nodeRedis = await optional<typeof import('redis')>('redis');
      if (nodeRedis) return nodeRedisConnection(nodeRedis, target);
    }
  }
  throw new CliUsageError(
    `tool-receipts needs a Redis client: install ioredis or redis (node-redis)${asked ? ` (TOOL_RECEIPTS_CLIENT=${asked})` : ''}`,
  );
}
