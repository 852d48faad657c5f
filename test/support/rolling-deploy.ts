/**
 * The rolling-deploy harness shared by the deploy tests in test/deploy/: a
 * fleet of worker processes (test/fixtures/deploy-worker.ts) of an earlier
 * release and of this checkout, in any receipt layout, on one Redis, key
 * prefix and queue; slots replaced one by one with SIGKILLs; the turns they
 * take; and the previous release's CLI, as an operator on a host not yet
 * upgraded would run it.
 */
import { execFile } from 'node:child_process';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Queue, type Job } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, expect } from 'vitest';
import type { OutboxEntry } from '../../examples/outbox-tools.js';
import { idempotencyKeyFor, type ToolJobResult } from '../../src/bullmq/index.js';
import { toolCallArgsHash } from '../../src/core/index.js';
import { ReceiptStore, type ReceiptRecord, type Resolution } from '../../src/redis/index.js';
import { PREVIOUS_RELEASE_COMMIT, releaseAt, type PreviousRelease } from './previous-release.js';
import { waitUntil } from './redis-fixture.js';
import { startRedis, type RedisHandle } from './redis.js';
import { runnableModule } from './compiled-scripts.js';
import { spawnWorkerProcess, type WorkerProcess } from './worker-process.js';

/**
 * A kind of worker: the earlier release the fleet was deployed with, or this
 * checkout: `current` as docs/upgrading.md deploys it beside an earlier
 * release (`receiptLayout: 2`, the layout every release reads), or with
 * `receiptLayout` set to the number after the dash.
 */
export type WorkerKind = 'previous' | 'current' | 'current-2' | 'current-4' | 'current-5';
type RedisModule = typeof import('../../src/redis/index.js');

/** This checkout's package as the deploy worker imports it: from the same tree it runs in (./compiled-scripts.ts). */
const CURRENT_ENTRY = runnableModule(fileURLToPath(new URL('../../src/index.ts', import.meta.url)));
const QUEUE = 'tool-calls';
const JOB_OPTIONS = { attempts: 4, backoff: { type: 'fixed', delay: 300 }, removeOnComplete: false, removeOnFail: false } as const;
/** Bounds for a loaded 2-core machine; every wait is on observable state. */
export const DRAIN_TIMEOUT_MS = 60_000;
export const STEP_TIMEOUT_MS = 30_000;

/** The state a receipt is in, as every release reads it. */
const CORE_FIELDS = [
  'redisKey',
  'key',
  'status',
  'attempts',
  'epoch',
  'effect',
  'owner',
  'leaseUntilMs',
  'createdMs',
  'completedMs',
  'result',
  'error',
  'tier',
  'ambiguousMs',
  'resolvedMs',
  'steps',
  'startedMs',
  'jobs',
] as const;
/** A record's {@link CORE_FIELDS}, as plain JSON. */
export const core = (record: object) =>
  JSON.parse(JSON.stringify(Object.fromEntries(CORE_FIELDS.map((f) => [f, (record as Record<string, unknown>)[f]]))));

/**
 * Registers a test file's hooks: the earlier release at `commit` (the
 * previous release unless given; made once per machine) and a redis-server
 * of the file's own, stopped after. Read both in a test.
 */
export function useReleaseAndRedis(commit = PREVIOUS_RELEASE_COMMIT): {
  readonly release: PreviousRelease;
  readonly server: RedisHandle;
} {
  const made = {} as { release: PreviousRelease; server: RedisHandle };
  beforeAll(async () => {
    [made.release, made.server] = await Promise.all([releaseAt(commit), startRedis()]);
  }, 180_000);
  afterAll(async () => {
    await made.server?.stop();
  });
  return made;
}

/** Runs the previous release's CLI against the server and prefix. */
export function previousCli(
  release: PreviousRelease,
  server: RedisHandle,
  args: readonly string[],
  prefix: string,
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [release.cli, ...args, '--redis', server.url, '--prefix', prefix],
      { timeout: 30_000, maxBuffer: 16 * 1024 * 1024 },
      (error, stdout, stderr) => resolve({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, stdout, stderr }),
    );
  });
}

/**
 * An operator's verdict on an ambiguous receipt, from what the outbox says
 * landed (a SIGKILLed worker lands nothing after), fenced on what they saw.
 */
export function verdictOf(outbox: readonly OutboxEntry[], record: ReceiptRecord): Resolution {
  const fence = { attemptsSeen: record.attempts, epochSeen: record.epoch };
  return outbox.some((e) => e.tool === record.key.toolName && e.idempotencyKey === idempotencyKeyFor(record.key))
    ? { ...fence, outcome: 'completed', result: { posted: true, resolvedBy: 'operator' } }
    : { ...fence, outcome: 'failed', error: 'not in the provider log' };
}

/** `tool-receipts resolve` for a verdict on a receipt, as an operator types it (the same in both releases). */
export function resolveArgs(record: ReceiptRecord, verdict: Resolution): string[] {
  return [
    'resolve',
    record.redisKey,
    '--attempts',
    String(record.attempts),
    // One argument: an epoch may start with '-', which as an argument of its own reads as an option.
    `--epoch=${record.epoch}`,
    ...(verdict.outcome === 'completed'
      ? ['--completed', '--result', JSON.stringify(verdict.result)]
      : ['--failed', '--error', verdict.error]),
  ];
}

/** A turn of batch `batch`: one to three calls of the four tools, in one of four runs of the batch. */
export function turn(batch: string, i: number) {
  const id = (k: string) => `toolu_${batch}_${i}_${k}`;
  const calls: { id: string; name: string; input: unknown }[] = [
    i % 2 === 0
      ? { id: id('mail'), name: 'send_email', input: { to: `u-${batch}${i}@example.test`, subject: `Order ${batch}${i}` } }
      : { id: id('post'), name: 'post_message', input: { channel: `#ops-${i % 3}`, text: `${batch} ${i}` } },
  ];
  if (i % 2 === 0) calls.push({ id: id('ticket'), name: 'create_ticket', input: { title: `${batch} follow-up ${i}` } });
  if (i % 3 === 0) calls.push({ id: id('charge'), name: 'charge_card', input: { customer: `cus_${batch}${i}`, cents: 100 + i } });
  return { tenantId: 'acme', runId: `run-${batch}-${i % 4}`, calls };
}
export type Turn = ReturnType<typeof turn>;

/** A worker in the fleet, or one that was. */
export interface Spawned {
  readonly kind: WorkerKind;
  readonly worker: WorkerProcess;
}

/** Options of {@link deployFleet}. */
export interface FleetOptions {
  readonly release: PreviousRelease;
  readonly server: RedisHandle;
  readonly prefix: string;
  /**
   * The tools each kind's workers freeze in (the fixture's FREEZE_POST and
   * FREEZE_TICKET: the first worker of the kind to get there); default
   * post_message for every kind.
   */
  readonly freeze?: Partial<Record<WorkerKind, readonly FreezingTool[]>>;
}
/** A tool the fixture can freeze in. */
export type FreezingTool = 'post_message' | 'create_ticket';

/** One queue, its workers and its turns; see the file's comment. */
export async function deployFleet({ release, server, prefix, freeze = {} }: FleetOptions) {
  const redis = new Redis(server.url, { maxRetriesPerRequest: null });
  const queue = new Queue(QUEUE, { connection: redis, prefix });
  const store = new ReceiptStore({ redis, prefix });
  // Both releases' stores on one connection, as two copies of the package in one app would have them: each
  // runs its own scripts (this release registers them under names that carry their text's hash).
  const old = (await import(pathToFileURL(release.redisEntry).href)) as RedisModule;
  const oldStore = new old.ReceiptStore({ redis, prefix });

  const spawned: Spawned[] = [];
  const fleet: Spawned[] = [];
  let kills = 0;
  const spawn = async (kind: WorkerKind): Promise<Spawned> => {
    const freezes = freeze[kind] ?? ['post_message'];
    const worker = await spawnWorkerProcess('deploy-worker', {
      REDIS_URL: server.url,
      PREFIX: prefix,
      QUEUE,
      RELEASE: kind,
      LIB_ENTRY: kind === 'previous' ? release.entry : CURRENT_ENTRY,
      ...(freezes.includes('post_message') ? { FREEZE_POST: '1' } : {}),
      ...(freezes.includes('create_ticket') ? { FREEZE_TICKET: '1' } : {}),
      ...(kind === 'current'
        ? { RECEIPT_LAYOUT: '2' }
        : kind.startsWith('current-')
          ? { RECEIPT_LAYOUT: kind.slice('current-'.length) }
          : {}),
    });
    const entry = { kind, worker };
    spawned.push(entry);
    return entry;
  };
  /** SIGKILLs the worker in `slot` (whatever it is doing) and starts one of `kind` there. */
  const replace = async (slot: number, kind: WorkerKind) => {
    kills++;
    await fleet[slot]!.worker.signal('SIGKILL');
    fleet[slot] = await spawn(kind);
  };
  /** Waits until a worker of `kind` froze in `tool` (the fixture's FREEZE_*), and returns it with what it said. */
  const frozen = async (kind: WorkerKind, tool: FreezingTool = 'post_message') => {
    const isIt = (m: { type: string; tool?: unknown }) => m.type === 'frozen' && m.tool === tool;
    const found = await waitUntil(
      async () => spawned.find((s) => s.kind === kind && s.worker.messages.some(isIt)),
      (s) => s !== undefined,
      STEP_TIMEOUT_MS,
      `a ${kind} worker to freeze in ${tool}`,
    );
    return { ...found!, said: found!.worker.messages.find(isIt) as unknown as { callId: string; idempotencyKey: string } };
  };
  /** Waits for a frozen worker (see {@link frozen}) and SIGKILLs it there, replacing it, unless it is gone already. */
  const killFrozen = async (kind: WorkerKind, replacement: WorkerKind, tool: FreezingTool = 'post_message') => {
    const found = await frozen(kind, tool);
    const slot = fleet.findIndex((s) => s.worker === found.worker);
    if (slot >= 0) await replace(slot, replacement);
    return found;
  };

  const turns = new Map<string, Turn>();
  /** Every job enqueued, in order. */
  const jobs: Job<Turn>[] = [];
  /** Enqueues a turn `times` times, as a redelivered turn would be. */
  const enqueue = async (data: Turn, times = 1): Promise<Job[]> => {
    const added: Job[] = [];
    for (let n = 0; n < times; n++) added.push(await queue.add('turn', data, JOB_OPTIONS));
    jobs.push(...added);
    return added;
  };
  /** A batch of turns; every third one is enqueued twice. */
  const batch = async (name: string, size: number): Promise<Job[]> => {
    const added: Job[] = [];
    for (let i = 0; i < size; i++) {
      const data = turn(name, i);
      turns.set(`${name}${i}`, data);
      added.push(...(await enqueue(data, i % 3 === 0 ? 2 : 1)));
    }
    return added;
  };
  const finished = async () => new Set(await queue.getRanges(['completed', 'failed'], 0, -1));
  /** The jobs not in `done` (the finished ones' ids), but those of a turn holding one of the calls in `held`. */
  const unfinished = (done: ReadonlySet<string>, held: readonly string[]) =>
    jobs.filter((job) => !done.has(job.id!) && !job.data.calls.some((call) => held.includes(call.id))).map((job) => job.id!);
  /** The calls live workers froze in (a turn holding one cannot finish until its worker is killed). */
  const frozenCalls = () =>
    spawned
      .filter((s) => s.worker.child.exitCode === null && s.worker.child.signalCode === null)
      .flatMap((s) => s.worker.messages.filter((m) => m.type === 'frozen').map((m) => m['callId'] as string));
  /**
   * Waits until every job enqueued so far has completed or failed, but those
   * of a turn holding one of the calls in `held` (a frozen worker's, and its
   * redelivered twin, which waits for it); `'frozen'` holds the calls live
   * workers froze in by then.
   */
  const drain = async (what: string, held: readonly string[] | 'frozen' = []) => {
    await waitUntil(
      async () => unfinished(await finished(), held === 'frozen' ? frozenCalls() : held),
      (left) => left.length === 0,
      DRAIN_TIMEOUT_MS,
      what,
    );
  };
  /** Waits until one more job has finished (or every one that can has), so a step happens while jobs flow. */
  const flowing = async (what: string) => {
    const seen = (await finished()).size;
    await waitUntil(
      async () => {
        const done = await finished();
        return { done: done.size, left: unfinished(done, frozenCalls()).length };
      },
      ({ done, left }) => done > seen || left === 0,
      STEP_TIMEOUT_MS,
      what,
    );
  };
  /** Every receipt of the turns' runs, as `reader` lists them. */
  const listAll = async (reader: Pick<ReceiptStore, 'listRun'>): Promise<ReceiptRecord[]> => {
    const runs = [...new Set([...turns.values()].map((t) => t.runId))];
    return (await Promise.all(runs.map((run) => reader.listRun('acme', run)))).flat();
  };
  /** The receipt key of each call of a turn. */
  const receiptKeys = (data: Turn) =>
    Promise.all(
      data.calls.map(async (call) =>
        store.redisKey({ tenantId: data.tenantId, runId: data.runId, toolName: call.name, argsHash: await toolCallArgsHash(call.input) }),
      ),
    );
  /**
   * Checks that each finished job in `replays` replayed every call whose
   * receipt in `before` (records by key) was completed in `layout` and not
   * resolved by hand, with the result recorded then; returns how many it saw.
   */
  const expectReplayed = async (replays: readonly Job[], before: ReadonlyMap<string, ReceiptRecord>, layout: number) => {
    let replayed = 0;
    for (const job of replays) {
      const done = (await queue.getJob(job.id!))!;
      const data = done.data as Turn;
      const results = (done.returnvalue as ToolJobResult | undefined)?.results ?? [];
      const keys = await receiptKeys(data);
      for (const [i, call] of data.calls.entries()) {
        const record = before.get(keys[i]!);
        if (record?.status !== 'completed' || record.schema !== layout || record.resolvedMs !== null) continue;
        expect(
          results.find((r) => r.tool_use_id === call.id),
          `${keys[i]} in job ${done.id} (${done.failedReason ?? 'completed'})`,
        ).toMatchObject({ outcome: 'replayed', content: (record.result as { content: string }).content });
        replayed++;
      }
    }
    return replayed;
  };
  const close = async () => {
    await Promise.all(spawned.map((s) => s.worker.signal('SIGKILL')));
    await queue.close();
    redis.disconnect();
  };

  return {
    redis,
    queue,
    store,
    oldStore,
    fleet,
    spawn,
    replace,
    frozen,
    killFrozen,
    turns,
    jobs,
    enqueue,
    batch,
    drain,
    flowing,
    listAll,
    receiptKeys,
    expectReplayed,
    close,
    get kills() {
      return kills;
    },
    get enqueued() {
      return jobs.length;
    },
  };
}
/** A fleet {@link deployFleet} made. */
export type Fleet = Awaited<ReturnType<typeof deployFleet>>;
