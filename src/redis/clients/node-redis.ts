/**
 * The adapter for node-redis 5 and 6 (`redis` / `@redis/client`): a client
 * from `createClient`, a cluster from `createCluster`, or a Sentinel-backed
 * client from `createSentinel`. Recognised by behaviour, so either major
 * fits. Commands go out with `sendCommand`; node-redis writes every command
 * issued in one tick in one go, so a batch is those commands sent together.
 */
import clusterKeySlot from 'cluster-key-slot';
import { adapterFor, evalWithFallback, learnedMasters, settleEach, wireArgs, type BatchEntry, type BatchReply, type LuaScript, type ReceiptsConnection, type ReceiptsNode, type RedisArg } from './types.js';

/**
 * A node-redis client, cluster or Sentinel client (redis 5 or 6), described
 * by the little the library needs to recognise one. Connect it (`await
 * client.connect()`) before the first call.
 */
export interface NodeRedisClient {
  readonly isOpen: boolean;
  sendCommand(...args: never[]): Promise<unknown>;
  on(event: never, listener: never): unknown;
}

type Wire = (string | Buffer)[];

interface Client {
  readonly isOpen: boolean;
  readonly options?: { readonly socket?: { readonly host?: string; readonly port?: number } };
  sendCommand(args: Wire): Promise<unknown>;
  on(event: string, listener: () => void): unknown;
}

interface ShardNode {
  readonly address: string;
  readonly client?: Client;
}

interface Cluster {
  readonly isOpen: boolean;
  readonly masters: readonly ShardNode[];
  sendCommand(firstKey: string | undefined, isReadonly: boolean | undefined, args: Wire): Promise<unknown>;
  nodeClient(node: ShardNode): Promise<Client>;
  getSlotMaster(slot: number): ShardNode | undefined;
}

interface Sentinel {
  readonly isOpen: boolean;
  sendCommand(isReadonly: boolean | undefined, args: Wire): Promise<unknown>;
  on(event: string, listener: () => void): unknown;
  getMasterNode(): { host: string; port: number } | undefined;
}

/** Whether `value` looks like a node-redis client, cluster or Sentinel client. */
export function looksLikeNodeRedis(value: object): value is NodeRedisClient {
  const v = value as Record<string, unknown>;
  return typeof v['sendCommand'] === 'function' && 'isOpen' in v;
}

/** A node-redis client pool (`createClientPool`): its commands may go out on any of its connections. */
export function isNodeRedisPool(value: object): boolean {
  return 'totalClients' in value;
}

/** One server's connection: a `createClient` client, or one master's client inside a cluster. */
class NodeRedisServer implements ReceiptsNode {
  constructor(
    protected readonly redis: Client,
    readonly name: string | undefined,
  ) {}

  /**
   * Open, rather than node-redis' `isReady`: that flag may still be false
   * when the reply to the first command sent during the handshake arrives. A
   * reconnect in between is caught by {@link onClose}, not by this.
   */
  get ready(): boolean {
    return this.redis.isOpen;
  }

  command(name: string, args: readonly RedisArg[]): Promise<unknown> {
    return this.redis.sendCommand([name, ...wireArgs(args)]);
  }

  onClose(listener: () => void): void {
    // A dropped socket makes the client reconnect; close()/destroy() end it.
    this.redis.on('reconnecting', listener);
    this.redis.on('end', listener);
  }
}

function run(conn: ReceiptsConnection, entry: BatchEntry): Promise<unknown> {
  return 'script' in entry ? conn.evalScript(entry.script, entry.keys, entry.args) : conn.command(entry.command, entry.args, entry.key);
}

class NodeRedisSingle extends NodeRedisServer implements ReceiptsConnection {
  readonly receiptsConnection = true;
  readonly client = 'node-redis';
  readonly topology = 'single';
  readonly isCluster = false;

  constructor(redis: Client) {
    const socket = redis.options?.socket;
    super(redis, socket?.host === undefined ? undefined : `${socket.host}:${socket.port ?? 6379}`);
  }

  private readonly loaded = new Set<string>();

  evalScript(script: LuaScript, keys: readonly string[], args: readonly RedisArg[]): Promise<unknown> {
    return evalWithFallback((a) => this.redis.sendCommand(wireArgs(a)), script, keys, args, this.loaded);
  }

  batch(entries: readonly BatchEntry[]): Promise<BatchReply[]> {
    return settleEach((e) => run(this, e), entries);
  }

  async masters(): Promise<ReceiptsNode[]> {
    return [this];
  }

  nodeFor(): ReceiptsNode {
    return this;
  }
}

const nodeAdapters = new WeakMap<object, NodeRedisServer>();

function nodeAdapter(client: Client, name: string): NodeRedisServer {
  return adapterFor(nodeAdapters, client, () => new NodeRedisServer(client, name));
}

class NodeRedisClusterConnection implements ReceiptsConnection {
  readonly receiptsConnection = true;
  readonly client = 'node-redis';
  readonly topology = 'cluster';
  readonly isCluster = true;

  constructor(private readonly cluster: Cluster) {}

  get ready(): boolean {
    return this.cluster.isOpen;
  }

  command(name: string, args: readonly RedisArg[], key?: string): Promise<unknown> {
    return this.cluster.sendCommand(key, false, [name, ...wireArgs(args)]);
  }

  private readonly loaded = new Set<string>();

  evalScript(script: LuaScript, keys: readonly string[], args: readonly RedisArg[]): Promise<unknown> {
    const server = this.nodeFor(keys[0] ?? '')?.name;
    return evalWithFallback((a) => this.cluster.sendCommand(keys[0], false, wireArgs(a)), script, keys, args, this.loaded, server);
  }

  batch(entries: readonly BatchEntry[]): Promise<BatchReply[]> {
    return settleEach((e) => run(this, e), entries);
  }

  async masters(): Promise<ReceiptsNode[]> {
    // node-redis queues nothing before a cluster has connected ("The client is offline"): wait, do not ping.
    const masters = await learnedMasters(() => this.cluster.masters, () => new Promise((r) => setTimeout(r, 50)));
    return Promise.all(masters.map(async (node) => nodeAdapter(await this.cluster.nodeClient(node), node.address)));
  }

  nodeFor(key: string): ReceiptsNode | undefined {
    const master = this.cluster.getSlotMaster(clusterKeySlot(key));
    return master?.client ? nodeAdapter(master.client, master.address) : undefined;
  }
}

/**
 * A Sentinel client: every command goes to the current master. `WAIT` counts
 * the writes of the connection it is sent on, so durability needs the
 * default master pool of one connection (`masterPoolSize: 1`).
 */
class NodeRedisSentinelConnection implements ReceiptsConnection, ReceiptsNode {
  readonly receiptsConnection = true;
  readonly client = 'node-redis';
  readonly topology = 'sentinel';
  readonly isCluster = false;

  constructor(private readonly sentinel: Sentinel) {}

  get name(): string | undefined {
    const master = this.sentinel.getMasterNode();
    return master && `${master.host}:${master.port}`;
  }

  get ready(): boolean {
    return this.sentinel.isOpen;
  }

  command(name: string, args: readonly RedisArg[]): Promise<unknown> {
    return this.sentinel.sendCommand(false, [name, ...wireArgs(args)]);
  }

  private readonly loaded = new Set<string>();

  evalScript(script: LuaScript, keys: readonly string[], args: readonly RedisArg[]): Promise<unknown> {
    return evalWithFallback((a) => this.sentinel.sendCommand(false, wireArgs(a)), script, keys, args, this.loaded, this.name);
  }

  batch(entries: readonly BatchEntry[]): Promise<BatchReply[]> {
    return settleEach((e) => run(this, e), entries);
  }

  async masters(): Promise<ReceiptsNode[]> {
    return [this];
  }

  nodeFor(): ReceiptsNode {
    return this;
  }

  onClose(listener: () => void): void {
    // A new master means a new connection: a WAIT there proves nothing about a write made before.
    this.sentinel.on('topology-change', listener);
    this.sentinel.on('end', listener);
  }
}

/** The adapter for a node-redis client, cluster or Sentinel client. */
export function nodeRedisConnection(client: NodeRedisClient): ReceiptsConnection {
  const v = client as unknown as Record<string, unknown>;
  if (typeof v['getSlotMaster'] === 'function') return new NodeRedisClusterConnection(client as unknown as Cluster);
  if (typeof v['getMasterNode'] === 'function') return new NodeRedisSentinelConnection(client as unknown as Sentinel);
  return new NodeRedisSingle(client as unknown as Client);
}
