/**
 * A Sentinel-managed Redis for failover tests: a primary, one replica and
 * three sentinels, all `redis-server` child processes on free loopback ports
 * (sentinel mode is the same binary). Short sentinel timeouts make a failover
 * take a few seconds. Any process can be SIGSTOPped, SIGCONTed or SIGKILLed
 * through its {@link LocalRedis} handle. Needs a local `redis-server`, like
 * the cluster: {@link clusterSkipReason} says when it cannot run.
 */
import { Redis, type RedisOptions } from 'ioredis';
import { LocalRedis, findOnPath } from './redis-process.js';
import { uniquePrefix } from './redis.js';
import { NO_SYNC_DELAY, waitCaughtUp, withNode } from './redis-cluster.js';

export { clusterSkipReason as sentinelSkipReason, withNode } from './redis-cluster.js';

/** The name the sentinels monitor the primary under. */
export const SENTINEL_MASTER_NAME = 'receipts';
/** Sentinel timing: a dead primary is subjectively down after this long (long enough that a loaded machine's pauses do not trigger failovers). */
const DOWN_AFTER_MS = 2000;
/** Also bounds how soon the sentinels fail over the same master again (twice this). */
const FAILOVER_TIMEOUT_MS = 1500;
const READY_DEADLINE_MS = 30_000;

export interface SentinelSetHandle {
  /** The two data nodes; which one is master changes with failovers. */
  readonly servers: readonly [LocalRedis, LocalRedis];
  readonly sentinels: readonly LocalRedis[];
  readonly prefix: string;
  /** A new client that finds the master through the sentinels; closed by {@link stop}. */
  connect(options?: RedisOptions): Redis;
  /** The data node the sentinels report as master now (asked of the first sentinel that answers). */
  master(): Promise<LocalRedis>;
  /** The data node that is not {@link master}. */
  replicaOf(master: LocalRedis): LocalRedis;
  /** Waits until `server` is master by the sentinels and by its own INFO. */
  waitForMaster(server: LocalRedis, timeoutMs?: number): Promise<void>;
  /**
   * SIGSTOPs `replica` and has the master drop its link, so no later write
   * reaches it. SIGSTOP alone is not enough: what the master already sent
   * waits in the stopped replica's socket buffer and is applied on SIGCONT.
   */
  cutOff(replica: LocalRedis): Promise<void>;
  /**
   * Starts a SIGKILLed former master again and makes it a replica of the
   * current master at once (the sentinels would, but only at their next
   * 10-second look), then waits until it has caught up.
   */
  rejoin(server: LocalRedis): Promise<void>;
  /** Waits until `replica` is linked to `master` and has caught up with its replication offset. */
  waitForSync(master: LocalRedis, replica: LocalRedis, timeoutMs?: number): Promise<void>;
  stop(): Promise<void>;
}

function infoField(info: string, field: string): string | undefined {
  return new RegExp(`^${field}:(.*)$`, 'm').exec(info)?.[1]?.trim();
}

async function poll(what: string, timeoutMs: number, check: () => Promise<boolean>): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      if (await check()) return;
    } catch (error) {
      last = error;
    }
    if (performance.now() > deadline) throw new Error(`timed out waiting for ${what}${last ? `: ${String(last)}` : ''}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Starts the primary, its replica and three sentinels, and waits until every sentinel knows them all. */
export async function startSentinelSet(): Promise<SentinelSetHandle> {
  const binary = findOnPath('redis-server');
  if (!binary) throw new Error('cannot start a Sentinel set: no redis-server binary on PATH');
  const prefix = uniquePrefix();
  const started: LocalRedis[] = [];
  const clients: Redis[] = [];
  const stop = async () => {
    for (const c of clients.splice(0)) c.disconnect();
    await Promise.all(started.map((n) => n.stop()));
  };
  try {
    const primary = await LocalRedis.start(binary, { extraArgs: NO_SYNC_DELAY }, prefix);
    started.push(primary);
    const replica = await LocalRedis.start(
      binary,
      { extraArgs: [...NO_SYNC_DELAY, '--replicaof', primary.host, String(primary.port)] },
      prefix,
    );
    started.push(replica);
    const config = [
      `sentinel monitor ${SENTINEL_MASTER_NAME} ${primary.host} ${primary.port} 2`,
      `sentinel down-after-milliseconds ${SENTINEL_MASTER_NAME} ${DOWN_AFTER_MS}`,
      `sentinel failover-timeout ${SENTINEL_MASTER_NAME} ${FAILOVER_TIMEOUT_MS}`,
      `sentinel parallel-syncs ${SENTINEL_MASTER_NAME} 1`,
    ].join('\n');
    await waitLinked(primary, replica, READY_DEADLINE_MS);
    const sentinels: LocalRedis[] = [];
    for (let i = 0; i < 3; i++) {
      const sentinel = await LocalRedis.start(binary, { sentinelConfig: config }, prefix);
      started.push(sentinel);
      sentinels.push(sentinel);
    }
    // Ready when each sentinel sees the replica and the two other sentinels.
    await poll('the sentinels to know the replica and each other', READY_DEADLINE_MS, async () => {
      const views = await Promise.all(
        sentinels.map((s) =>
          withNode(s, async (admin) => {
            const replicas = (await admin.call('SENTINEL', 'REPLICAS', SENTINEL_MASTER_NAME)) as unknown[];
            const others = (await admin.call('SENTINEL', 'SENTINELS', SENTINEL_MASTER_NAME)) as unknown[];
            return replicas.length === 1 && others.length === 2;
          }),
        ),
      );
      return views.every(Boolean);
    });
    const servers = [primary, replica] as const;
    const handle: SentinelSetHandle = {
      servers,
      sentinels,
      prefix,
      connect(options = { maxRetriesPerRequest: 3 }) {
        const client = new Redis({
          sentinels: sentinels.map((s) => ({ host: s.host, port: s.port })),
          name: SENTINEL_MASTER_NAME,
          sentinelRetryStrategy: () => 100,
          retryStrategy: () => 100,
          ...options,
        });
        client.on('error', () => undefined);
        clients.push(client);
        return client;
      },
      async master() {
        for (const sentinel of sentinels) {
          try {
            const [, port] = (await withNode(sentinel, (admin) =>
              admin.call('SENTINEL', 'GET-MASTER-ADDR-BY-NAME', SENTINEL_MASTER_NAME),
            )) as [string, string];
            const found = servers.find((s) => s.port === Number(port));
            if (found) return found;
          } catch {
            // a paused or killed sentinel: ask the next
          }
        }
        throw new Error('no sentinel named a master');
      },
      replicaOf(master) {
        return master === primary ? replica : primary;
      },
      async waitForMaster(server, timeoutMs = READY_DEADLINE_MS) {
        await poll(`port ${server.port} to be promoted`, timeoutMs, async () => {
          if ((await handle.master()) !== server) return false;
          const info = await withNode(server, (admin) => admin.info('replication'));
          return infoField(info, 'role') === 'master';
        });
      },
      waitForSync: waitLinked,
      async rejoin(server) {
        const master = handle.replicaOf(server);
        await server.restart();
        await withNode(server, (admin) => admin.call('REPLICAOF', master.host, String(master.port)));
        await waitLinked(master, server);
      },
      async cutOff(replica) {
        await replica.pause();
        await withNode(handle.replicaOf(replica), (admin) => admin.call('CLIENT', 'KILL', 'TYPE', 'replica'));
      },
      stop,
    };
    return handle;
  } catch (err) {
    await stop();
    throw err;
  }
}

function waitLinked(master: LocalRedis, replica: LocalRedis, timeoutMs = READY_DEADLINE_MS): Promise<void> {
  return waitCaughtUp(master, replica, timeoutMs);
}
