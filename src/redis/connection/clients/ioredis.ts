/**
 * The adapter for ioredis 5 and 6 (`Redis` and `Cluster`), recognised by
 * behaviour so the user's own copy of ioredis, whichever major, fits.
 * Over 300 lines: the sender (which commands ioredis wrote, and those held
 * back until it may) and the three adapters on it, kept together so they stay alike.
 */
import clusterKeySlot from 'cluster-key-slot';
import { ioredisAddress, ioredisClusterAddress, type IoredisOptions } from './address.js';
import { CommandDeadlineError, CommandNotSentError } from './deadline.js';
import { LoadedFunctions } from './functions.js';
import { evalWithFallback, functionToCall, isNoScript, type LoadedScripts, type ScriptSend } from './script-calls.js';
import {
  adapterFor,
  learnedMasters,
  settleEach,
  type BatchEntry,
  type BatchReply,
  type LuaScript,
  type ReceiptsConnection,
  type ReceiptsNode,
  type RedisArg,
  variantFor,
} from './types.js';

/** A script command's name as ioredis names its own (lower case), without lower-casing it on every call. */
const SCRIPT_COMMAND = { EVAL: 'eval', EVALSHA: 'evalsha', FCALL: 'fcall', FUNCTION: 'function' } as const;

/**
 * An ioredis `Redis` or `Cluster` (5 or 6), described by the little the
 * library needs to recognise one: both majors' classes fit.
 */
export interface IoredisClient {
  /** ioredis' connection state; `ready` once commands go straight out. */
  readonly status: string;
  call(command: string, args: (string | Buffer | number)[]): Promise<unknown>;
  pipeline(): unknown;
  on(event: 'close' | 'ready' | 'end', listener: () => void): unknown;
  /** Starts connecting a client made with `lazyConnect` (status `wait`), as its first command would. */
  connect?(): Promise<unknown>;
}

interface Pipeline {
  call(command: string, args: RedisArg[]): unknown;
  exec(): Promise<[Error | null, unknown][] | null>;
}

interface IoredisNode extends IoredisClient {
  readonly options: { readonly host?: string; readonly port?: number };
}

interface IoredisCluster extends IoredisClient {
  readonly isCluster: true;
  readonly slots: readonly (readonly string[] | undefined)[];
  /** The nodes it was made with: `host:port` or URL strings, ports, or `{ host, port }`. */
  readonly startupNodes?: readonly unknown[];
  nodes(role: 'master'): IoredisNode[];
  ping(): Promise<unknown>;
}

/** Whether `value` looks like an ioredis `Redis` or `Cluster`. */
export function looksLikeIoredis(value: object): value is IoredisClient {
  const v = value as Record<string, unknown>;
  return typeof v['defineCommand'] === 'function' && typeof v['pipeline'] === 'function' && typeof v['on'] === 'function';
}

/** Statuses in which ioredis may write a command at once (`connect`: its handshake, before `ready`). */
const MAY_WRITE = new Set(['ready', 'connect']);

/**
 * ioredis' errors for the commands it drops from its queues: after
 * `maxRetriesPerRequest` reconnects, or once the connection is closed for
 * good. The same error object also rejects commands already written (its
 * queue of commands awaiting replies is flushed with it), so it means
 * "never sent" only for a command ioredis has held back since it was issued.
 */
function dropsHeld(error: unknown): boolean {
  return error instanceof Error && (error.name === 'MaxRetriesPerRequestError' || error.message === 'Connection is closed.');
}

/** ioredis' refusals made before writing anything: the offline queue is disabled and there is no connection. */
const REFUSED_UNWRITTEN = /^(Stream isn't writeable|Cluster isn't ready) and enableOfflineQueue options is false/;

/** What a command written at once failed with: "never sent" when ioredis refused it unwritten, else as it is. */
function sentError(error: unknown): unknown {
  return error instanceof Error && REFUSED_UNWRITTEN.test(error.message) ? new CommandNotSentError(error) : error;
}

/** {@link sentError}, thrown: the handler of a command with no deadline. */
function rethrowSentError(error: unknown): never {
  throw sentError(error);
}

/**
 * The reply of a command handed to a connected client, failing after
 * `deadlineMs` (from now, as it may be written now). One timer and its two
 * callbacks: every command the stores send comes here.
 */
function withDeadline(reply: Promise<unknown>, deadlineMs: number): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(missedDeadline, deadlineMs, reject, deadlineMs);
    reply.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (error: unknown) => {
        clearTimeout(timer);
        reject(sentError(error));
      },
    );
  });
}

/** A written command's deadline passed with no reply. */
function missedDeadline(reject: (error: unknown) => void, deadlineMs: number): void {
  reject(new CommandDeadlineError(deadlineMs, true, true));
}

/** A command this sender holds back while its client has no connection (see {@link IoredisSender}). */
interface HeldCommand {
  /** Gives it to ioredis, now that the client is ready. */
  release(): void;
  /** Fails it as never sent: the client was closed for good. */
  drop(): void;
}

/**
 * Sends the commands of one ioredis client (a `Redis`, or a `Cluster` at its
 * own level) and tells which it never wrote. With a deadline (every store's
 * connection has one), a command issued while the client has no connection
 * (never connected yet, or reconnecting) is held here, not handed to
 * ioredis: ioredis would keep it in its offline queue and write it at its
 * next `ready` even after rejecting it (its own `commandTimeout` leaves it
 * queued), so it could never be called unsent. Held here, it goes to ioredis
 * at the client's next `ready`; when the deadline passes first, or the
 * client is closed for good (`end`), it fails as never sent, and it is then
 * never written. Once given to ioredis, the deadline runs again from that
 * moment, when it may be written. With `enableOfflineQueue: false` nothing
 * is held: ioredis refuses such a command itself, unwritten. Without a
 * deadline a command goes to ioredis at once, and one ioredis drops from
 * its offline queue (`maxRetriesPerRequest`, a closed client) without ever
 * being ready in between never left. On a Cluster, a command the cluster
 * passed to a node that then held it back counts as sent.
 */
class IoredisSender {
  private readies = 0;
  /** Deadlines of commands ioredis holds, started at the next `ready` (when ioredis writes them). */
  private readonly armOnReady = new Set<() => void>();
  /** Commands held back here until the next `ready`, in the order they were issued. */
  private readonly held = new Set<HeldCommand>();
  /** False with `enableOfflineQueue: false`: then ioredis refuses such a command at once, unwritten, and nothing is held. */
  private readonly queuesOffline: boolean;

  constructor(private readonly redis: IoredisClient) {
    this.queuesOffline = (redis as { options?: { enableOfflineQueue?: boolean } }).options?.enableOfflineQueue !== false;
    redis.on('ready', () => {
      this.readies += 1;
      const arms = [...this.armOnReady];
      this.armOnReady.clear();
      for (const arm of arms) arm();
      const held = [...this.held];
      this.held.clear();
      for (const command of held) command.release();
    });
    redis.on('end', () => {
      const held = [...this.held];
      this.held.clear();
      for (const command of held) command.drop();
    });
  }

  send(issue: () => Promise<unknown>, deadlineMs: number | undefined): Promise<unknown> {
    const writable = MAY_WRITE.has(this.redis.status);
    if (writable) return deadlineMs === undefined ? issue().catch(rethrowSentError) : withDeadline(issue(), deadlineMs);
    if (deadlineMs !== undefined && this.queuesOffline) return this.hold(issue, deadlineMs);
    // Given to ioredis without a connection (no deadline to hold it by here, or no offline queue): see the class.
    const readies = this.readies;
    const stillHeld = () => this.readies === readies;
    const reply = issue();
    return new Promise((resolve, reject) => {
      let timer: ReturnType<typeof setTimeout> | undefined;
      const arm = () => {
        timer = setTimeout(missedDeadline, deadlineMs, reject, deadlineMs!);
      };
      if (deadlineMs !== undefined) {
        if (stillHeld()) this.armOnReady.add(arm);
        else arm();
      }
      const settle = () => {
        clearTimeout(timer);
        this.armOnReady.delete(arm);
      };
      reply.then(
        (value) => {
          settle();
          resolve(value);
        },
        (error: unknown) => {
          settle();
          reject(stillHeld() && dropsHeld(error) ? new CommandNotSentError(error as Error) : sentError(error));
        },
      );
    });
  }

  /** Holds a command until the client is next `ready`, for at most `deadlineMs` (see the class). */
  private hold(issue: () => Promise<unknown>, deadlineMs: number): Promise<unknown> {
    // A client made with lazyConnect connects on its first command: this is one, though ioredis has not seen it yet.
    if (this.redis.status === 'wait') this.redis.connect?.().catch(() => undefined);
    return new Promise((resolve, reject) => {
      const command: HeldCommand = {
        release: () => {
          clearTimeout(timer);
          this.send(issue, deadlineMs).then(resolve, reject);
        },
        drop: () => {
          clearTimeout(timer);
          reject(new CommandNotSentError(new Error('Connection is closed.')));
        },
      };
      const timer = setTimeout(() => {
        this.held.delete(command);
        reject(new CommandNotSentError(new CommandDeadlineError(deadlineMs, false, false)));
      }, deadlineMs);
      this.held.add(command);
    });
  }
}

const senders = new WeakMap<object, IoredisSender>();

/** The one {@link IoredisSender} of `client`. */
function senderOf(client: IoredisClient): IoredisSender {
  return adapterFor(senders, client, () => new IoredisSender(client));
}

/** The adapter for one ioredis server connection (a `Redis`, or one node of a `Cluster`). */
class IoredisServer implements ReceiptsNode {
  protected readonly sender: IoredisSender;

  constructor(
    protected readonly redis: IoredisClient,
    readonly name: string | undefined,
    readonly deadlineMs: number | undefined,
  ) {
    this.sender = senderOf(redis);
  }

  get ready(): boolean {
    return this.redis.status === 'ready';
  }

  command(name: string, args: readonly RedisArg[]): Promise<unknown> {
    // ioredis names its own commands in lower case (its monitors and key lookups expect it). It copies `args`.
    return this.sender.send(() => this.redis.call(name.toLowerCase(), args as RedisArg[]), this.deadlineMs);
  }

  /** How `evalWithFallback` sends a script here (and a library's load, for a Cluster's node): made once, not per call. */
  readonly sendScript: ScriptSend = (command, args) =>
    this.sender.send(() => this.redis.call(SCRIPT_COMMAND[command], args as RedisArg[]), this.deadlineMs);

  onClose(listener: () => void): void {
    this.redis.on('close', listener);
  }
}

/** What the adapters of one ioredis client share, whatever their deadline. */
interface Shared<A> {
  /** The scripts each server has been sent (see `evalWithFallback`). */
  readonly loaded: LoadedScripts;
  readonly variants: Map<number | undefined, A>;
  /** The script libraries each server has loaded as functions. */
  readonly functions: LoadedFunctions;
}

/** A `Redis` (one server, or a master found through sentinels). */
class IoredisSingle extends IoredisServer implements ReceiptsConnection {
  readonly receiptsConnection = true;
  readonly client = 'ioredis';
  readonly topology: 'single' | 'sentinel';
  readonly isCluster = false;
  readonly address: string | undefined;

  constructor(
    redis: IoredisClient,
    deadlineMs: number | undefined,
    private readonly shared: Shared<IoredisSingle> = { loaded: new Map(), variants: new Map(), functions: new LoadedFunctions() },
  ) {
    const options = (redis as Partial<IoredisNode>).options as IoredisOptions | undefined;
    super(redis, options?.host === undefined ? undefined : `${options.host}:${options.port ?? 6379}`, deadlineMs);
    this.topology = Array.isArray(options?.sentinels) && options.sentinels.length > 0 ? 'sentinel' : 'single';
    this.address = ioredisAddress(options);
    shared.variants.set(deadlineMs, this);
  }

  withDeadline(deadlineMs: number | undefined): IoredisSingle {
    return variantFor(this.shared.variants, deadlineMs, () => new IoredisSingle(this.redis, deadlineMs, this.shared));
  }

  evalScript(script: LuaScript, keys: readonly string[], args: readonly RedisArg[]): Promise<unknown> {
    return evalWithFallback(this.sendScript, script, keys, args, this.shared.loaded, '', this.shared.functions);
  }

  async batch(entries: readonly BatchEntry[]): Promise<BatchReply[]> {
    const pipeline = this.redis.pipeline() as Pipeline;
    const functions = this.shared.functions;
    // Each script by FCALL where its library is loaded, else by EVALSHA (and the library's load started).
    const called = entries.map((entry) => {
      if (!('script' in entry)) {
        pipeline.call(entry.command.toLowerCase(), [...entry.args]);
        return undefined;
      }
      const fn = functionToCall(entry.script, '', functions, this.sendScript);
      pipeline.call(fn !== undefined ? 'fcall' : 'evalsha', [
        fn?.name ?? entry.script.sha,
        entry.keys.length,
        ...entry.keys,
        ...entry.args,
      ]);
      return fn;
    });
    const replies = ((await this.sender.send(() => pipeline.exec(), this.deadlineMs)) as [Error | null, unknown][] | null) ?? [];
    return Promise.all(
      entries.map(async (entry, i): Promise<BatchReply> => {
        const reply = replies[i] ?? [new Error('the pipeline returned no reply for this command'), undefined];
        if (!('script' in entry) || reply[0] === null) return reply;
        const fn = called[i];
        const unrun = fn === undefined ? isNoScript(reply[0]) : functions.refusedUnrun('', fn, reply[0]);
        if (!unrun) return reply;
        const [again] = await settleEach(() => this.evalScript(entry.script, entry.keys, entry.args), [entry]);
        return again!;
      }),
    );
  }

  async masters(): Promise<ReceiptsNode[]> {
    return [this];
  }

  nodeFor(): ReceiptsNode {
    return this;
  }
}

const nodeAdapters = new WeakMap<object, Map<number | undefined, IoredisServer>>();

/** The adapter of one node of a Cluster, one per node and deadline. */
function nodeAdapter(node: IoredisNode, deadlineMs: number | undefined): IoredisServer {
  const variants = adapterFor(nodeAdapters, node, () => new Map<number | undefined, IoredisServer>());
  return variantFor(
    variants,
    deadlineMs,
    () => new IoredisServer(node, `${node.options.host ?? '127.0.0.1'}:${node.options.port ?? 6379}`, deadlineMs),
  );
}

/** A `Cluster`: ioredis routes each keyed command (EVALSHA included) to the slot's master itself. */
class IoredisClusterConnection implements ReceiptsConnection {
  readonly receiptsConnection = true;
  readonly client = 'ioredis';
  readonly topology = 'cluster';
  readonly isCluster = true;
  private readonly sender: IoredisSender;

  constructor(
    private readonly cluster: IoredisCluster,
    readonly deadlineMs: number | undefined,
    private readonly shared: Shared<IoredisClusterConnection> = {
      loaded: new Map(),
      variants: new Map(),
      functions: new LoadedFunctions(),
    },
  ) {
    this.sender = senderOf(cluster);
    shared.variants.set(deadlineMs, this);
  }

  get address(): string | undefined {
    return ioredisClusterAddress(this.cluster.startupNodes);
  }

  withDeadline(deadlineMs: number | undefined): IoredisClusterConnection {
    return variantFor(this.shared.variants, deadlineMs, () => new IoredisClusterConnection(this.cluster, deadlineMs, this.shared));
  }

  get ready(): boolean {
    return this.cluster.status === 'ready';
  }

  command(name: string, args: readonly RedisArg[]): Promise<unknown> {
    return this.sender.send(() => this.cluster.call(name.toLowerCase(), args as RedisArg[]), this.deadlineMs);
  }

  /** How `evalWithFallback` sends a script here: made once, not per call. */
  private readonly sendScript: ScriptSend = (command, args) =>
    this.sender.send(() => this.cluster.call(SCRIPT_COMMAND[command], args as RedisArg[]), this.deadlineMs);

  evalScript(script: LuaScript, keys: readonly string[], args: readonly RedisArg[]): Promise<unknown> {
    // FCALL is routed by its keys as EVALSHA is; a library is loaded on the key's master, known by name.
    const master = this.nodeFor(keys[0] ?? '');
    const functions = master?.name === undefined ? undefined : this.shared.functions;
    return evalWithFallback(this.sendScript, script, keys, args, this.shared.loaded, master?.name, functions, master?.sendScript);
  }

  batch(entries: readonly BatchEntry[]): Promise<BatchReply[]> {
    return settleEach((e) => ('script' in e ? this.evalScript(e.script, e.keys, e.args) : this.command(e.command, e.args)), entries);
  }

  async masters(): Promise<ReceiptsNode[]> {
    return (
      await learnedMasters(
        () => this.cluster.nodes('master'),
        () => this.cluster.ping(),
      )
    ).map((node) => nodeAdapter(node, this.deadlineMs));
  }

  nodeFor(key: string): IoredisServer | undefined {
    const owner = this.cluster.slots[clusterKeySlot(key)]?.[0];
    if (owner === undefined) return undefined;
    const node = this.cluster.nodes('master').find((n) => `${n.options.host ?? '127.0.0.1'}:${n.options.port ?? 6379}` === owner);
    return node && nodeAdapter(node, this.deadlineMs);
  }
}

/** The adapter for an ioredis `Redis` or `Cluster`. */
export function ioredisConnection(client: IoredisClient): ReceiptsConnection {
  return (client as { isCluster?: unknown }).isCluster === true
    ? new IoredisClusterConnection(client as IoredisCluster, undefined)
    : new IoredisSingle(client, undefined);
}
