/**
 * The one connection interface the stores talk through. Everything above it
 * (stores, durability, doctor, scans) speaks only this; one adapter per
 * Redis client (ioredis, node-redis) implements it, so no code path above
 * knows which client the user handed in.
 *
 * Replies are what the server sent, decoded the way both clients agree on
 * for the commands the library sends: integers as numbers, bulk strings as
 * strings, nil as `null`, arrays as arrays. The few commands whose reply
 * shape differs between RESP2 and RESP3 (node-redis 6 speaks RESP3 by
 * default) are read through the helpers in `./commands.ts`.
 */

/** One argument of a command or script. Numbers are sent as their decimal text. */
export type RedisArg = string | number | Buffer;

/** A Lua script as the library sends it: its text and the SHA1 of that text (for EVALSHA). */
export interface LuaScript {
  /** The file the script came from (`lua/<name>-<n>.lua`), for messages. */
  readonly file: string;
  readonly source: string;
  readonly sha: string;
  /** The same script as a Redis Function library, run by FCALL where the server has it loaded; absent: EVAL only. */
  readonly function?: ScriptFunction;
}

/** A script as a Redis Function library: `library` (FUNCTION LOAD's text) registers one function, `name`. */
export interface ScriptFunction {
  readonly name: string;
  readonly library: string;
}

/** One entry of a {@link ReceiptsConnection.batch}: a script run or a plain command. */
export type BatchEntry =
  | { readonly script: LuaScript; readonly keys: readonly string[]; readonly args: readonly RedisArg[] }
  | { readonly command: string; readonly args: readonly RedisArg[]; readonly key?: string };

/** The reply of one batch entry: the error it failed with, or its result. */
export type BatchReply = [error: Error | null, result: unknown];

/**
 * One server's connection: a single-node client, or one master of a Cluster.
 * Commands sent through it go to that server on that connection, which is
 * what `WAIT`/`WAITAOF` need (they count the writes of the connection they
 * are sent on).
 */
export interface ReceiptsNode {
  /** `host:port`, when the client knows it (a Cluster's nodes always do). */
  readonly name: string | undefined;
  /** Whether commands go straight out now (connected and ready). */
  readonly ready: boolean;
  /** Sends one command to this server. */
  command(name: string, args: readonly RedisArg[]): Promise<unknown>;
  /** Calls `listener` each time this connection drops or is closed. */
  onClose(listener: () => void): void;
}

/** Which client library an adapter wraps. */
export type RedisClientKind = 'ioredis' | 'node-redis';

/**
 * What the stores call on Redis, whichever client is inside. A single node is
 * its own (only) master; on a Cluster every keyed call is routed to the
 * master owning its key's slot (every script's keys share one hash tag).
 */
export interface ReceiptsConnection {
  /** Marks an adapter, so handing one back to the library does not wrap it twice. */
  readonly receiptsConnection: true;
  /** The client library inside. For messages and benchmarks only: no behaviour depends on it. */
  readonly client: RedisClientKind;
  /** The topology the client talks to. */
  readonly topology: 'single' | 'cluster' | 'sentinel';
  /**
   * Where the client connects, for messages: a URL with any password masked
   * (`redis://:***@10.0.0.5:6379`), or a Cluster's or Sentinel set's seed
   * nodes; `undefined` when the client does not say.
   */
  readonly address: string | undefined;
  /** `true` for a Cluster client: pipelines must then stay in one slot, and SCAN must visit every master. */
  readonly isCluster: boolean;
  /** Whether commands go straight out now. */
  readonly ready: boolean;
  /**
   * Runs `script` with EVALSHA, falling back to EVAL when the server answers
   * NOSCRIPT (after a restart, a failover or SCRIPT FLUSH). On a Cluster it
   * is routed by `keys[0]`.
   */
  evalScript(script: LuaScript, keys: readonly string[], args: readonly RedisArg[]): Promise<unknown>;
  /**
   * Sends one command. On a Cluster it goes to the master owning `key`
   * (usually the command's first key), or to any node when `key` is absent.
   */
  command(name: string, args: readonly RedisArg[], key?: string): Promise<unknown>;
  /**
   * Sends the entries together (one pipeline on a single node) and returns a
   * reply per entry, in order; a failed entry does not fail the others. Not a
   * transaction. On a Cluster each entry is routed on its own.
   */
  batch(entries: readonly BatchEntry[]): Promise<BatchReply[]>;
  /** Every master: the one server of a single node or Sentinel set, each master of a Cluster. */
  masters(): Promise<ReceiptsNode[]>;
  /**
   * How long a command sent through this connection (or a node it names) may
   * go without a reply, in ms, before it fails; `undefined`: as long as the
   * client lets it.
   */
  readonly deadlineMs: number | undefined;
  /** The same client's connection with another {@link ReceiptsConnection.deadlineMs | deadline} (one per client and deadline). */
  withDeadline(deadlineMs: number | undefined): ReceiptsConnection;
  /**
   * The connection a write to `key` went out on, as the client routes it
   * now; `undefined` when the client cannot name it (e.g. a Cluster slot
   * with no known master). `WAIT` sent through it counts that write.
   */
  nodeFor(key: string): ReceiptsNode | undefined;
}

/** True for a {@link ReceiptsConnection} (an adapter the library made). */
export function isReceiptsConnection(value: unknown): value is ReceiptsConnection {
  return typeof value === 'object' && value !== null && (value as { receiptsConnection?: unknown }).receiptsConnection === true;
}

/** `command` and the text of each argument (node-redis sends strings and Buffers only), built as one array. */
export function wireCommand(command: string, args: readonly RedisArg[]): (string | Buffer)[] {
  const wire = new Array<string | Buffer>(args.length + 1);
  wire[0] = command;
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    wire[i + 1] = typeof a === 'number' ? String(a) : a;
  }
  return wire;
}

/**
 * Settles each entry on its own (every client pipelines concurrent commands
 * written in the same tick) and retries by text any script the server did
 * not have.
 */
export function settleEach(run: (entry: BatchEntry) => Promise<unknown>, entries: readonly BatchEntry[]): Promise<BatchReply[]> {
  return Promise.all(
    entries.map((entry) =>
      run(entry).then(
        (result): BatchReply => [null, result],
        (error: unknown): BatchReply => [error instanceof Error ? error : new Error(String(error)), undefined],
      ),
    ),
  );
}

/** How long {@link learnedMasters} waits for a new Cluster client to learn its masters. */
const LEARN_MASTERS_MS = 10_000;

/**
 * The masters `list` names, once it names any: a Cluster client that has
 * just been made learns its nodes asynchronously, and an empty list would
 * read as "no keys". Pings through `ping` (which waits for the client or
 * fails as any command would) and looks again, for a bounded time; an empty
 * list after that is returned as is, for the caller to refuse.
 */
export async function learnedMasters<T>(list: () => readonly T[], ping: () => Promise<unknown>): Promise<T[]> {
  const deadline = performance.now() + LEARN_MASTERS_MS;
  for (;;) {
    const found = list();
    if (found.length > 0 || performance.now() > deadline) return [...found];
    await ping();
    if (list().length === 0) await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * The one adapter per deadline of a client, made by `make` the first time:
 * `variants` is shared by every adapter of that client.
 */
export function variantFor<A>(variants: Map<number | undefined, A>, deadlineMs: number | undefined, make: () => A): A {
  let variant = variants.get(deadlineMs);
  if (variant === undefined) {
    variant = make();
    variants.set(deadlineMs, variant);
  }
  return variant;
}

/**
 * The adapter `cache` holds for `client`, made by `make` the first time: one
 * adapter per client object, so what an adapter keeps (the scripts a server
 * has loaded, its closes) is kept once.
 */
export function adapterFor<K extends object, A>(cache: WeakMap<K, A>, client: K, make: () => A): A {
  let adapter = cache.get(client);
  if (adapter === undefined) {
    adapter = make();
    cache.set(client, adapter);
  }
  return adapter;
}
