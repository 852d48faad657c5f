/**
 * The adapter for ioredis 5 and 6 (`Redis` and `Cluster`), recognised by
 * behaviour so the user's own copy of ioredis, whichever major, fits.
 */
import clusterKeySlot from 'cluster-key-slot';
import {
  adapterFor,
  evalWithFallback,
  isNoScript,
  learnedMasters,
  settleEach,
  type BatchEntry,
  type BatchReply,
  type LuaScript,
  type ReceiptsConnection,
  type ReceiptsNode,
  type RedisArg,
} from './types.js';

/**
 * An ioredis `Redis` or `Cluster` (5 or 6), described by the little the
 * library needs to recognise one: both majors' classes fit.
 */
export interface IoredisClient {
  /** ioredis' connection state; `ready` once commands go straight out. */
  readonly status: string;
  call(command: string, args: (string | Buffer | number)[]): Promise<unknown>;
  pipeline(): unknown;
  on(event: 'close', listener: () => void): unknown;
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
  nodes(role: 'master'): IoredisNode[];
  ping(): Promise<unknown>;
}

/** Whether `value` looks like an ioredis `Redis` or `Cluster`. */
export function looksLikeIoredis(value: object): value is IoredisClient {
  const v = value as Record<string, unknown>;
  return typeof v['defineCommand'] === 'function' && typeof v['pipeline'] === 'function';
}

/** The adapter for one ioredis server connection (a `Redis`, or one node of a `Cluster`). */
class IoredisServer implements ReceiptsNode {
  constructor(
    protected readonly redis: IoredisClient,
    readonly name: string | undefined,
  ) {}

  get ready(): boolean {
    return this.redis.status === 'ready';
  }

  command(name: string, args: readonly RedisArg[]): Promise<unknown> {
    // ioredis names its own commands in lower case (its monitors and key lookups expect it).
    return this.redis.call(name.toLowerCase(), [...args]);
  }

  onClose(listener: () => void): void {
    this.redis.on('close', listener);
  }
}

/** A `Redis` (one server, or a master found through sentinels). */
class IoredisSingle extends IoredisServer implements ReceiptsConnection {
  readonly receiptsConnection = true;
  readonly client = 'ioredis';
  readonly topology: 'single' | 'sentinel';
  readonly isCluster = false;

  constructor(redis: IoredisClient) {
    const options = (redis as Partial<IoredisNode>).options as { host?: string; port?: number; sentinels?: unknown } | undefined;
    super(redis, options?.host === undefined ? undefined : `${options.host}:${options.port ?? 6379}`);
    this.topology = Array.isArray(options?.sentinels) && options.sentinels.length > 0 ? 'sentinel' : 'single';
  }

  private readonly loaded = new Set<string>();

  evalScript(script: LuaScript, keys: readonly string[], args: readonly RedisArg[]): Promise<unknown> {
    return evalWithFallback((a) => this.command(String(a[0]), a.slice(1)), script, keys, args, this.loaded);
  }

  async batch(entries: readonly BatchEntry[]): Promise<BatchReply[]> {
    const pipeline = this.redis.pipeline() as Pipeline;
    for (const entry of entries) {
      if ('script' in entry) pipeline.call('evalsha', [entry.script.sha, entry.keys.length, ...entry.keys, ...entry.args]);
      else pipeline.call(entry.command.toLowerCase(), [...entry.args]);
    }
    const replies = (await pipeline.exec()) ?? [];
    return Promise.all(
      entries.map(async (entry, i): Promise<BatchReply> => {
        const reply = replies[i] ?? [new Error('the pipeline returned no reply for this command'), undefined];
        if (!('script' in entry) || !isNoScript(reply[0])) return reply;
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

const nodeAdapters = new WeakMap<object, IoredisServer>();

function nodeAdapter(node: IoredisNode): IoredisServer {
  return adapterFor(nodeAdapters, node, () => new IoredisServer(node, `${node.options.host ?? '127.0.0.1'}:${node.options.port ?? 6379}`));
}

/** A `Cluster`: ioredis routes each keyed command (EVALSHA included) to the slot's master itself. */
class IoredisClusterConnection implements ReceiptsConnection {
  readonly receiptsConnection = true;
  readonly client = 'ioredis';
  readonly topology = 'cluster';
  readonly isCluster = true;

  constructor(private readonly cluster: IoredisCluster) {}

  get ready(): boolean {
    return this.cluster.status === 'ready';
  }

  command(name: string, args: readonly RedisArg[]): Promise<unknown> {
    return this.cluster.call(name.toLowerCase(), [...args]);
  }

  private readonly loaded = new Set<string>();

  evalScript(script: LuaScript, keys: readonly string[], args: readonly RedisArg[]): Promise<unknown> {
    return evalWithFallback((a) => this.command(String(a[0]), a.slice(1)), script, keys, args, this.loaded, this.nodeFor(keys[0] ?? '')?.name);
  }

  batch(entries: readonly BatchEntry[]): Promise<BatchReply[]> {
    return settleEach((e) => ('script' in e ? this.evalScript(e.script, e.keys, e.args) : this.command(e.command, e.args)), entries);
  }

  async masters(): Promise<ReceiptsNode[]> {
    return (await learnedMasters(() => this.cluster.nodes('master'), () => this.cluster.ping())).map(nodeAdapter);
  }

  nodeFor(key: string): ReceiptsNode | undefined {
    const owner = this.cluster.slots[clusterKeySlot(key)]?.[0];
    if (owner === undefined) return undefined;
    const node = this.cluster.nodes('master').find((n) => `${n.options.host ?? '127.0.0.1'}:${n.options.port ?? 6379}` === owner);
    return node && nodeAdapter(node);
  }
}

/** The adapter for an ioredis `Redis` or `Cluster`. */
export function ioredisConnection(client: IoredisClient): ReceiptsConnection {
  return (client as { isCluster?: unknown }).isCluster === true
    ? new IoredisClusterConnection(client as IoredisCluster)
    : new IoredisSingle(client);
}
