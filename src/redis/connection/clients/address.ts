/**
 * Where a client connects, said in a message as a URL with any password
 * masked: made from the options ioredis and node-redis keep (neither keeps
 * the URL it was given, once parsed, except node-redis' `url`).
 */
import { maskedUrl } from '../../../core/errors.js';

/** How a client's options name one server (ioredis' and node-redis' `socket` names alike). */
export interface ServerOptions {
  readonly host?: string;
  readonly port?: number;
  /** A Unix socket instead of a host and port. */
  readonly path?: string;
  /** Set (to anything but `false`) for TLS. */
  readonly tls?: unknown;
  readonly username?: string;
  readonly password?: unknown;
  /** The database number (`db`, node-redis' `database`). */
  readonly db?: number;
}

/** `redis://[user[:***]@]host:port[/db]` (`rediss` with TLS), or `unix://path`: the password only as `***`. */
export function serverUrl(server: ServerOptions): string {
  const db = server.db ? `/${server.db}` : '';
  if (server.path !== undefined) return `unix://${server.path}${db}`;
  const secret = server.password !== undefined && server.password !== null && server.password !== '' ? ':***' : '';
  const user = server.username || secret ? `${encodeURIComponent(server.username ?? '')}${secret}@` : '';
  const host = server.host ?? '127.0.0.1';
  const shownHost = host.includes(':') && !host.startsWith('[') ? `[${host}]` : host;
  const scheme = server.tls !== undefined && server.tls !== false ? 'rediss' : 'redis';
  return `${scheme}://${user}${shownHost}:${server.port ?? 6379}${db}`;
}

/** A node-redis client's options, as far as they say where it connects (it keeps `url` beside what it parsed from it). */
export interface NodeRedisOptions {
  readonly url?: string;
  readonly socket?: { readonly host?: string; readonly port?: number; readonly path?: string; readonly tls?: unknown };
  readonly username?: string;
  readonly password?: unknown;
  readonly database?: number;
}

/** Where a node-redis client with `options` connects: the URL it was given, or one made from its socket. */
export function nodeRedisAddress(options: NodeRedisOptions | undefined): string | undefined {
  if (options === undefined) return undefined;
  if (typeof options.url === 'string' && options.url !== '') return maskedUrl(options.url);
  const { socket, username, password, database } = options;
  return serverUrl({ ...socket, username, password, db: database });
}

/** Several servers (a Cluster's seed nodes, a Sentinel set), as one line. */
export function serverList(servers: readonly string[], what: string): string | undefined {
  return servers.length === 0 ? undefined : `${what} ${servers.join(', ')}`;
}

/** An ioredis `Redis`'s options, as far as they say where it connects. */
export interface IoredisOptions extends ServerOptions {
  readonly sentinels?: readonly { readonly host?: string; readonly port?: number }[];
  /** The master's name, with `sentinels`. */
  readonly name?: string;
}

/** Where an ioredis `Redis` connects: its URL, or its Sentinels and master name. */
export function ioredisAddress(options: IoredisOptions | undefined): string | undefined {
  if (options === undefined) return undefined;
  const sentinels = options.sentinels?.map((s) => `${s.host ?? '127.0.0.1'}:${s.port ?? 26379}`) ?? [];
  if (sentinels.length > 0) return `${serverList(sentinels, 'the Sentinels')} (master ${options.name ?? 'mymaster'})`;
  return serverUrl(options);
}

/** Where an ioredis `Cluster` connects: the nodes it was made with (`host:port` or URL strings, ports, or `{ host, port }`). */
export function ioredisClusterAddress(startupNodes: readonly unknown[] | undefined): string | undefined {
  const nodes = (startupNodes ?? []).map((node) => {
    if (typeof node === 'string') return node.includes('://') ? maskedUrl(node) : node;
    if (typeof node === 'number') return `127.0.0.1:${node}`;
    const { host, port } = (node ?? {}) as { host?: string; port?: number };
    return `${host ?? '127.0.0.1'}:${port ?? 6379}`;
  });
  return serverList(nodes, 'the Cluster nodes');
}
