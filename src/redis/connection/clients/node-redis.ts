/**
 * The adapter for node-redis 5 and 6 (`redis` / `@redis/client`): a client
 * from `createClient`, a cluster from `createCluster`, or a Sentinel-backed
 * client from `createSentinel`. Recognised by behaviour, so either major
 * fits. Commands go out with `sendCommand`; node-redis writes every command
 * issued in one tick in one go, so a batch is those commands sent together.
 * Over 300 lines: one adapter for the three node-redis shapes (client, cluster, Sentinel), kept together so they stay alike.
 */
import clusterKeySlot from 'cluster-key-slot';
import { nodeRedisAddress, serverList, type NodeRedisOptions } from './address.js';
import { CommandDeadlineError, CommandNotSentError } from './deadline.js';
import { LoadedFunctions } from './functions.js';
import { evalWithFallback, type LoadedScripts, type ScriptSend } from './script-calls.js';
import {
  adapterFor,
  learnedMasters,
  settleEach,
  variantFor,
  wireCommand,
  type BatchEntry,
  type BatchReply,
  type LuaScript,
  type ReceiptsConnection,
  type ReceiptsNode,
  type RedisArg,
} from './types.js';

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

/** The command options the adapters pass: their own deadline's signal, in place of node-redis' queue timeout. */
interface SendOptions {
  readonly abortSignal?: AbortSignal;
  readonly timeout?: undefined;
}

interface Client {
  readonly isOpen: boolean;
  readonly isReady?: boolean;
  readonly options?: NodeRedisOptions;
  sendCommand(args: Wire, options?: SendOptions): Promise<unknown>;
  on(event: string, listener: () => void): unknown;
}

interface ShardNode {
  readonly address: string;
  readonly client?: Client;
}

interface Cluster {
  readonly isOpen: boolean;
  /** What `createCluster` was given: its `rootNodes` are where it connects first. */
  readonly _options?: { readonly rootNodes?: readonly NodeRedisOptions[] };
  readonly masters: readonly ShardNode[];
  sendCommand(firstKey: string | undefined, isReadonly: boolean | undefined, args: Wire, options?: SendOptions): Promise<unknown>;
  nodeClient(node: ShardNode): Promise<Client>;
  getSlotMaster(slot: number): ShardNode | undefined;
}

interface Sentinel {
  readonly isOpen: boolean;
  sendCommand(isReadonly: boolean | undefined, args: Wire, options?: SendOptions): Promise<unknown>;
  on(event: string, listener: () => void): unknown;
  getMasterNode(): { host: string; port: number } | undefined;
}

/** node-redis' refusals made before a command is queued: the client is closed, or offline with no offline queue. */
const REFUSED_UNQUEUED = new Set(['ClientClosedError', 'ClientOfflineError']);

const isAbort = (error: unknown): boolean => error instanceof Error && error.constructor.name === 'AbortError';

/**
 * Sends one command through `send` (a `sendCommand`, which takes the command
 * options last). node-redis queues a command and writes it once its socket is
 * ready; it takes a command back on its `abortSignal`, or fails it at its
 * `commandOptions.timeout` (5 s by default in node-redis 6), only while it is
 * still queued, and waits for a written command's reply as long as the
 * socket stays up. So a deadline is kept here: when it passes, the command is
 * aborted; taken back from the queue it never left, and fails as never sent
 * at once; already written, it fails as unanswered. The deadline replaces
 * node-redis' timeout for these commands, whose `TimeoutError` also fails
 * written commands in a maintenance handover and so could not tell the two
 * apart. `exact` is false where node-redis may write a command again on
 * another connection after writing it once (Sentinel): there nothing is
 * known to be unsent.
 */
function sendWithin(
  send: (options?: SendOptions) => Promise<unknown>,
  deadlineMs: number | undefined,
  connected: () => boolean,
  exact: boolean,
): Promise<unknown> {
  const refused = (error: unknown) =>
    exact && error instanceof Error && REFUSED_UNQUEUED.has(error.constructor.name) ? new CommandNotSentError(error) : error;
  if (deadlineMs === undefined) return send().catch((error: unknown) => Promise.reject(refused(error)));
  const controller = new AbortController();
  const reply = send({ abortSignal: controller.signal, timeout: undefined });
  return new Promise((resolve, reject) => {
    let late: { connected: boolean } | undefined;
    const timer = setTimeout(() => {
      late = { connected: connected() };
      controller.abort();
      // A command taken back from the queue has been rejected by now (AbortError); a written one has not.
      setImmediate(() => reject(new CommandDeadlineError(deadlineMs, true, true)));
    }, deadlineMs);
    reply.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (error: unknown) => {
        clearTimeout(timer);
        if (late === undefined || !isAbort(error)) return reject(refused(error));
        const unwritten = new CommandDeadlineError(deadlineMs, late.connected, !exact);
        reject(exact ? new CommandNotSentError(unwritten) : unwritten);
      },
    );
  });
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
    readonly deadlineMs: number | undefined,
  ) {}

  /**
   * Open, rather than node-redis' `isReady`: that flag may still be false
   * when the reply to the first command sent during the handshake arrives. A
   * reconnect in between is caught by {@link onClose}, not by this.
   */
  get ready(): boolean {
    return this.redis.isOpen;
  }

  protected send(wire: Wire): Promise<unknown> {
    return sendWithin(
      (options) => this.redis.sendCommand(wire, options),
      this.deadlineMs,
      () => this.redis.isReady !== false,
      true,
    );
  }

  command(name: string, args: readonly RedisArg[]): Promise<unknown> {
    return this.send(wireCommand(name, args));
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

/** What the adapters of one node-redis client share, whatever their deadline. */
interface Shared<A> {
  /** The scripts each server has been sent (see `evalWithFallback`). */
  readonly loaded: LoadedScripts;
  readonly variants: Map<number | undefined, A>;
  /** The script libraries each server has loaded as functions. */
  readonly functions: LoadedFunctions;
}

const newShared = <A>(): Shared<A> => ({ loaded: new Map(), variants: new Map(), functions: new LoadedFunctions() });

class NodeRedisSingle extends NodeRedisServer implements ReceiptsConnection {
  readonly receiptsConnection = true;
  readonly client = 'node-redis';
  readonly topology = 'single';
  readonly isCluster = false;
  readonly address: string | undefined;

  constructor(
    redis: Client,
    deadlineMs: number | undefined,
    private readonly shared: Shared<NodeRedisSingle> = newShared(),
  ) {
    const socket = redis.options?.socket;
    super(redis, socket?.host === undefined ? undefined : `${socket.host}:${socket.port ?? 6379}`, deadlineMs);
    this.address = nodeRedisAddress(redis.options);
    shared.variants.set(deadlineMs, this);
  }

  withDeadline(deadlineMs: number | undefined): NodeRedisSingle {
    return variantFor(this.shared.variants, deadlineMs, () => new NodeRedisSingle(this.redis, deadlineMs, this.shared));
  }

  /** How `evalWithFallback` sends a script here: made once, not per call. */
  private readonly sendScript: ScriptSend = (command, args) => this.send(wireCommand(command, args));

  evalScript(script: LuaScript, keys: readonly string[], args: readonly RedisArg[]): Promise<unknown> {
    return evalWithFallback(this.sendScript, script, keys, args, this.shared.loaded, '', this.shared.functions);
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

const nodeAdapters = new WeakMap<object, Map<number | undefined, NodeRedisServer>>();

/** The adapter of one master's client inside a cluster, one per client and deadline. */
function nodeAdapter(client: Client, name: string, deadlineMs: number | undefined): NodeRedisServer {
  const variants = adapterFor(nodeAdapters, client, () => new Map<number | undefined, NodeRedisServer>());
  return variantFor(variants, deadlineMs, () => new NodeRedisServer(client, name, deadlineMs));
}

class NodeRedisClusterConnection implements ReceiptsConnection {
  readonly receiptsConnection = true;
  readonly client = 'node-redis';
  readonly topology = 'cluster';
  readonly isCluster = true;

  constructor(
    private readonly cluster: Cluster,
    readonly deadlineMs: number | undefined,
    private readonly shared: Shared<NodeRedisClusterConnection> = newShared(),
  ) {
    shared.variants.set(deadlineMs, this);
  }

  withDeadline(deadlineMs: number | undefined): NodeRedisClusterConnection {
    return variantFor(this.shared.variants, deadlineMs, () => new NodeRedisClusterConnection(this.cluster, deadlineMs, this.shared));
  }

  get address(): string | undefined {
    const roots = (this.cluster._options?.rootNodes ?? []).map(nodeRedisAddress).filter((a): a is string => a !== undefined);
    return serverList(roots, 'the Cluster nodes');
  }

  get ready(): boolean {
    return this.cluster.isOpen;
  }

  /**
   * Sends to the master owning `key`. node-redis writes a command again only
   * on a redirection (MOVED, ASK), which the server answered without running
   * it, so what is known of the last try holds for the command.
   */
  private send(key: string | undefined, wire: Wire): Promise<unknown> {
    const connected = () => this.cluster.getSlotMaster(clusterKeySlot(key ?? ''))?.client?.isReady !== false;
    return sendWithin((options) => this.cluster.sendCommand(key, false, wire, options), this.deadlineMs, connected, true);
  }

  command(name: string, args: readonly RedisArg[], key?: string): Promise<unknown> {
    return this.send(key, wireCommand(name, args));
  }

  evalScript(script: LuaScript, keys: readonly string[], args: readonly RedisArg[]): Promise<unknown> {
    // FCALL and a library's load go to the key's master, as EVALSHA does; its functions are known by its name.
    const server = this.nodeFor(keys[0] ?? '')?.name;
    const functions = server === undefined ? undefined : this.shared.functions;
    const send: ScriptSend = (command, a) => this.send(keys[0], wireCommand(command, a));
    return evalWithFallback(send, script, keys, args, this.shared.loaded, server, functions);
  }

  batch(entries: readonly BatchEntry[]): Promise<BatchReply[]> {
    return settleEach((e) => run(this, e), entries);
  }

  async masters(): Promise<ReceiptsNode[]> {
    // node-redis queues nothing before a cluster has connected ("The client is offline"): wait, do not ping.
    const masters = await learnedMasters(
      () => this.cluster.masters,
      () => new Promise((r) => setTimeout(r, 50)),
    );
    return Promise.all(masters.map(async (node) => nodeAdapter(await this.cluster.nodeClient(node), node.address, this.deadlineMs)));
  }

  nodeFor(key: string): ReceiptsNode | undefined {
    const master = this.cluster.getSlotMaster(clusterKeySlot(key));
    return master?.client ? nodeAdapter(master.client, master.address, this.deadlineMs) : undefined;
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

  constructor(
    private readonly sentinel: Sentinel,
    readonly deadlineMs: number | undefined,
    private readonly shared: Shared<NodeRedisSentinelConnection> = newShared(),
  ) {
    shared.variants.set(deadlineMs, this);
  }

  withDeadline(deadlineMs: number | undefined): NodeRedisSentinelConnection {
    return variantFor(this.shared.variants, deadlineMs, () => new NodeRedisSentinelConnection(this.sentinel, deadlineMs, this.shared));
  }

  get name(): string | undefined {
    const master = this.sentinel.getMasterNode();
    return master && `${master.host}:${master.port}`;
  }

  /** The master the Sentinels named last; node-redis does not say which Sentinels it asks. */
  get address(): string | undefined {
    const master = this.name;
    return master && `the Sentinels' master ${master}`;
  }

  get ready(): boolean {
    return this.sentinel.isOpen;
  }

  /** Sends to the master. After a failover node-redis may write a command again on the new master, so none is known unsent. */
  private send(wire: Wire): Promise<unknown> {
    return sendWithin(
      (options) => this.sentinel.sendCommand(false, wire, options),
      this.deadlineMs,
      () => this.sentinel.isOpen,
      false,
    );
  }

  command(name: string, args: readonly RedisArg[]): Promise<unknown> {
    return this.send(wireCommand(name, args));
  }

  /** How `evalWithFallback` sends a script here: made once, not per call. */
  private readonly sendScript: ScriptSend = (command, args) => this.send(wireCommand(command, args));

  evalScript(script: LuaScript, keys: readonly string[], args: readonly RedisArg[]): Promise<unknown> {
    return evalWithFallback(this.sendScript, script, keys, args, this.shared.loaded, this.name, this.shared.functions);
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
  if (typeof v['getSlotMaster'] === 'function') return new NodeRedisClusterConnection(client as unknown as Cluster, undefined);
  if (typeof v['getMasterNode'] === 'function') return new NodeRedisSentinelConnection(client as unknown as Sentinel, undefined);
  return new NodeRedisSingle(client as unknown as Client, undefined);
}
