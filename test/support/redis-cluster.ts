/**
 * A small Redis Cluster for tests: a few `redis-server` processes in cluster
 * mode on free loopback ports, slots split evenly among the masters, and
 * optionally one replica per master.
 * The nodes are joined with CLUSTER ADDSLOTS and CLUSTER MEET, so no
 * `redis-cli` is needed. Only a local `redis-server` can be clustered: with
 * `REDIS_URL` set, or with Docker only, {@link clusterSkipReason} says why the
 * cluster tests are skipped.
 */
import { spawnSync } from 'node:child_process';
import { Cluster, Redis, type RedisOptions } from 'ioredis';
import { afterAll, beforeAll } from 'vitest';
import { LocalRedis, findOnPath } from './redis-process.js';
import { uniquePrefix } from './redis.js';

const SLOTS = 16384;
const READY_DEADLINE_MS = 20_000;
/** A replica's full sync starts at once, not after the default 5 s wait for more replicas. */
export const NO_SYNC_DELAY = ['--repl-diskless-sync-delay', '0'];

/** A running cluster: its nodes, and clients that are closed with it. */
export interface RedisClusterHandle {
  /** The masters, in slot order. */
  readonly nodes: readonly LocalRedis[];
  /** With `replicas: 1`, `replicas[i]` replicates `nodes[i]`; empty otherwise. */
  readonly replicas: readonly LocalRedis[];
  /** A key prefix unique to this cluster. */
  readonly prefix: string;
  /**
   * A new Cluster client seeded with the first node; closed by {@link stop}.
   * `redisOptions` go to its node connections (BullMQ wants
   * `maxRetriesPerRequest: null`).
   */
  connect(redisOptions?: RedisOptions): Cluster;
  /** `host:port` of the master that owns `key`, asked of the cluster itself. */
  ownerOf(key: string): Promise<string>;
  stop(): Promise<void>;
}

/** Why a cluster cannot be formed here, or undefined when it can. */
export function clusterSkipReason(): string | undefined {
  if (process.env.REDIS_URL) return 'REDIS_URL is set, and a cluster needs servers this process starts itself';
  const binary = findOnPath('redis-server');
  if (!binary) return 'no redis-server binary on PATH to start cluster nodes with';
  // The nodes need `cluster-port` (Redis 7) so their bus ports can be picked free.
  const version = /v=(\d+)\./.exec(spawnSync(binary, ['--version'], { encoding: 'utf8' }).stdout ?? '')?.[1];
  if (version === undefined || Number(version) < 7) return `redis-server ${version ?? '(unknown version)'} predates cluster-port (Redis 7)`;
  return undefined;
}

/** Runs `use` on a short-lived plain connection to one node; fails fast when the node is down. */
export async function withNode<T>(node: LocalRedis, use: (admin: Redis) => Promise<T>): Promise<T> {
  const admin = new Redis(node.url, { maxRetriesPerRequest: 1, connectTimeout: 2000, retryStrategy: () => null });
  admin.on('error', () => undefined);
  try {
    return await use(admin);
  } finally {
    admin.disconnect();
  }
}

/** `state/known nodes/slot ranges` as one node sees the cluster. */
function clusterState(node: LocalRedis): Promise<string> {
  return withNode(node, async (admin) => {
    const info = (await admin.call('CLUSTER', 'INFO')) as string;
    const slots = ((await admin.call('CLUSTER', 'SLOTS')) as unknown[]).length;
    const state = /cluster_state:(\w+)/.exec(info)?.[1] ?? '?';
    const known = /cluster_known_nodes:(\d+)/.exec(info)?.[1] ?? '0';
    return `${state}/${known}/${slots}`;
  });
}

const offset = (info: string, field: string) => Number(new RegExp(`^${field}:(\\d+)`, 'm').exec(info)?.[1] ?? NaN);

/**
 * Waits until `replica` follows `master` with its link up and has everything
 * `master` had written when the wait began (the master keeps writing: pings,
 * sentinel hellos, so the offsets are compared with what was there at the start).
 */
export async function waitCaughtUp(master: LocalRedis, replica: LocalRedis, timeoutMs = READY_DEADLINE_MS): Promise<void> {
  const target = offset(await withNode(master, (admin) => admin.info('replication')), 'master_repl_offset');
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const mine = await withNode(replica, (admin) => admin.info('replication')).catch(() => '');
    const follows = mine.includes(`master_port:${master.port}\r\n`) && mine.includes('master_link_status:up');
    if (follows && offset(mine, 'slave_repl_offset') >= target) return;
    if (performance.now() > deadline) throw new Error(`port ${replica.port} did not catch up with port ${master.port} (offset ${target})`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** SIGSTOP the replica and have its master drop the link, so nothing more reaches it until {@link reconnectReplica}. */
export async function cutOffReplica(replica: LocalRedis, master: LocalRedis): Promise<void> {
  await replica.pause();
  await withNode(master, (admin) => admin.call('CLIENT', 'KILL', 'TYPE', 'replica'));
}

/** Resumes a replica {@link cutOffReplica} cut off, and waits until it has caught up with its master. */
export async function reconnectReplica(replica: LocalRedis, master: LocalRedis): Promise<void> {
  await replica.resume();
  await waitCaughtUp(master, replica);
}

/**
 * A primary (started with `options`, plus {@link NO_SYNC_DELAY}) and one
 * replica of it, caught up: for the durability tests on a single server.
 */
export async function startPrimaryWithReplica(
  prefix: string,
  options: { appendonly?: boolean } = {},
): Promise<{ primary: LocalRedis; replica: LocalRedis }> {
  const binary = findOnPath('redis-server')!;
  const primary = await LocalRedis.start(binary, { ...options, extraArgs: NO_SYNC_DELAY }, prefix);
  const replica = await LocalRedis.start(
    binary,
    { extraArgs: [...NO_SYNC_DELAY, '--replicaof', primary.host, String(primary.port)] },
    prefix,
  );
  await waitCaughtUp(primary, replica);
  return { primary, replica };
}

async function replicationCaughtUp(replica: LocalRedis): Promise<boolean> {
  const info = await withNode(replica, (admin) => admin.info('replication'));
  return /master_link_status:up/.test(info) && !/master_sync_in_progress:1/.test(info);
}

/**
 * Starts `size` masters (default 3), splits the slots, gives each master
 * `replicas` (0 or 1) replica, and waits until every node sees the whole
 * cluster and every replica is linked.
 */
export async function startRedisCluster(
  size = 3,
  options: { replicas?: 0 | 1; /** cluster-node-timeout: how soon a dead master's replica takes over. */ nodeTimeoutMs?: number } = {},
): Promise<RedisClusterHandle> {
  const extraArgs = [...NO_SYNC_DELAY, ...(options.nodeTimeoutMs ? ['--cluster-node-timeout', String(options.nodeTimeoutMs)] : [])];
  const skip = clusterSkipReason();
  if (skip !== undefined) throw new Error(`cannot start a Redis Cluster: ${skip}`);
  const binary = findOnPath('redis-server')!;
  const prefix = uniquePrefix();
  const nodes: LocalRedis[] = [];
  const replicas: LocalRedis[] = [];
  const clients: Cluster[] = [];
  const stop = async () => {
    await Promise.all(clients.splice(0).map((c) => c.quit().catch(() => c.disconnect())));
    await Promise.all([...nodes, ...replicas].map((n) => n.stop()));
  };
  try {
    for (let i = 0; i < size; i++) nodes.push(await LocalRedis.start(binary, { cluster: true, extraArgs }, prefix));
    const seed = nodes[0]!;
    const seedBusPort = await withNode(seed, async (admin) => ((await admin.config('GET', 'cluster-port')) as string[])[1] ?? '');
    for (const [i, node] of nodes.entries()) {
      await withNode(node, async (admin) => {
        const from = Math.floor((SLOTS * i) / size);
        const to = Math.floor((SLOTS * (i + 1)) / size);
        await admin.call('CLUSTER', 'ADDSLOTS', ...Array.from({ length: to - from }, (_, k) => String(from + k)));
        // The seed's bus port is not port + 10000 (see redis-process.ts), so MEET names it.
        if (i > 0) await admin.call('CLUSTER', 'MEET', seed.host, String(seed.port), seedBusPort);
      });
    }
    const seedBus = seedBusPort;
    for (let i = 0; i < (options.replicas ?? 0) * size; i++) {
      const replica = await LocalRedis.start(binary, { cluster: true, extraArgs }, prefix);
      replicas.push(replica);
      await withNode(replica, (admin) => admin.call('CLUSTER', 'MEET', seed.host, String(seed.port), seedBus));
    }
    // Ready when every node reports state ok, knows every node, and sees one slot range per master.
    const ready = `ok/${size + replicas.length}/${size}`;
    const deadline = performance.now() + READY_DEADLINE_MS;
    let states: string[] = [];
    const replicated = new Set<number>();
    for (;;) {
      // A replica can only be told whom to follow once it knows that master.
      for (const [i, replica] of replicas.entries()) {
        if (replicated.has(i)) continue;
        const masterId = await withNode(nodes[i]!, async (admin) => String(await admin.call('CLUSTER', 'MYID')));
        const ok = await withNode(replica, (admin) => admin.call('CLUSTER', 'REPLICATE', masterId)).then(
          () => true,
          () => false,
        );
        if (ok) replicated.add(i);
      }
      states = await Promise.all([...nodes, ...replicas].map(clusterState));
      const linked = replicated.size === replicas.length && (await Promise.all(replicas.map(replicationCaughtUp))).every(Boolean);
      if (linked && states.every((s) => s === ready)) break;
      if (performance.now() > deadline) throw new Error(`cluster did not form: node states ${states.join(', ')}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  } catch (err) {
    await stop();
    throw err;
  }
  return {
    nodes,
    replicas,
    prefix,
    connect(redisOptions = { maxRetriesPerRequest: 3 }) {
      const client = new Cluster([{ host: nodes[0]!.host, port: nodes[0]!.port }], { redisOptions });
      clients.push(client);
      return client;
    },
    async ownerOf(key) {
      // Just after a failover a node may be down, or may not know yet who serves a slot (a master that
      // rejoined as a replica, say): each node is asked in turn, again until one knows.
      const ask = (node: LocalRedis) =>
        withNode(node, async (admin) => {
          const slot = Number(await admin.call('CLUSTER', 'KEYSLOT', key));
          const ranges = (await admin.call('CLUSTER', 'SLOTS')) as [number, number, [string, number]][];
          const range = ranges.find(([from, to]) => slot >= from && slot <= to);
          return range === undefined ? undefined : `${range[2][0]}:${range[2][1]}`;
        }).catch(() => undefined);
      // An answer counts when the node it names says it is a master: a view not yet updated names the old one.
      const isMaster = (owner: string) => {
        const named = [...nodes, ...replicas].find((n) => `${n.host}:${n.port}` === owner);
        if (named === undefined) return Promise.resolve(false);
        return withNode(named, async (admin) => ((await admin.call('ROLE')) as unknown[])[0] === 'master').catch(() => false);
      };
      const deadline = Date.now() + 30_000;
      for (;;) {
        for (const node of [...nodes, ...replicas]) {
          const owner = await ask(node);
          if (owner !== undefined && (await isMaster(owner))) return owner;
        }
        if (Date.now() > deadline) throw new Error(`no node of this cluster says who serves the slot of ${key} (asked for 30 s)`);
        await new Promise((r) => setTimeout(r, 100));
      }
    },
    stop,
  };
}

/**
 * Starts a three-master Cluster before the tests of the describe block it is
 * called in, and stops it after them: the set-up each Cluster suite would
 * otherwise restate. The getter returns the running cluster.
 */
export function useRedisCluster(): () => RedisClusterHandle {
  let cluster: RedisClusterHandle | undefined;
  beforeAll(async () => {
    cluster = await startRedisCluster(3);
  }, 120_000);
  afterAll(async () => {
    await cluster?.stop();
  });
  return () => {
    if (cluster === undefined) throw new Error('the Cluster is not running (is this called inside a test?)');
    return cluster;
  };
}
