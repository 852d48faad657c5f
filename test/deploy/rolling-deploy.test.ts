/**
 * A rolling deploy, as users run one: worker processes of the previous
 * release (test/support/previous-release.ts) and of this checkout on one
 * Redis, one key prefix and one queue, SIGKILLed while they work, the
 * previous ones replaced one by one, then a rollback. Effects are counted
 * outside the package, in the workers' outbox (test/fixtures/deploy-worker.ts).
 *
 * It holds the promise across releases: no effect lands twice; a receipt
 * either release wrote is read the same by the other (its stores, its CLI
 * and its workers, which replay it); an ambiguous receipt of either is
 * resolved by the other's CLI; and both releases' `stats` count every
 * receipt. What it checks is public behaviour (records, CLI output, job
 * results), not the fields a release stores, so it holds for whatever this
 * checkout adds to a receipt.
 */
import { execFile } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Queue, type Job } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { duplicateEffects, readOutbox } from '../../examples/outbox-tools.js';
import { idempotencyKeyFor, type ToolJobResult } from '../../src/bullmq/index.js';
import { toolCallArgsHash } from '../../src/core/index.js';
import { ORDINARY_RECEIPT_SCHEMA, ReceiptStore, type ReceiptRecord } from '../../src/redis/index.js';
import { showCommand } from '../../src/cli/commands/show.js';
import { Capture } from '../cli/support.js';
import { previousRelease, type PreviousRelease } from '../support/previous-release.js';
import { waitUntil } from '../support/redis-fixture.js';
import { startRedis, type RedisHandle } from '../support/redis.js';
import { spawnWorkerProcess, type WorkerProcess } from '../support/worker-process.js';

type Release = 'previous' | 'current';
type RedisModule = typeof import('../../src/redis/index.js');

const CURRENT_ENTRY = fileURLToPath(new URL('../../src/index.ts', import.meta.url));
const QUEUE = 'tool-calls';
const JOB_OPTIONS = { attempts: 4, backoff: { type: 'fixed', delay: 300 }, removeOnComplete: false, removeOnFail: false } as const;
/** Bounds for a loaded 2-core machine; every wait is on observable state. */
const DRAIN_TIMEOUT_MS = 60_000;
const STEP_TIMEOUT_MS = 30_000;

let release: PreviousRelease;
let server: RedisHandle;
const everyWorker: WorkerProcess[] = [];

beforeAll(async () => {
  [release, server] = await Promise.all([previousRelease(), startRedis()]);
}, 180_000);

afterAll(async () => {
  await Promise.all(everyWorker.map((w) => w.signal('SIGKILL')));
  await server?.stop();
});

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
const core = (record: object) =>
  JSON.parse(JSON.stringify(Object.fromEntries(CORE_FIELDS.map((f) => [f, (record as Record<string, unknown>)[f]]))));

/** Runs the previous release's CLI, as an operator on a host not yet upgraded would. */
function previousCli(args: readonly string[], prefix: string): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [release.cli, ...args, '--redis', server.url, '--prefix', prefix],
      { timeout: 30_000, maxBuffer: 16 * 1024 * 1024 },
      (error, stdout, stderr) => resolve({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, stdout, stderr }),
    );
  });
}

it('previous and current workers share one queue under SIGKILLs, a deploy and a rollback: nothing lands twice, each reads what the other wrote', async () => {
  const prefix = `${server.prefix}deploy`;
  const redis = new Redis(server.url, { maxRetriesPerRequest: null });
  const queue = new Queue(QUEUE, { connection: redis, prefix });
  const store = new ReceiptStore({ redis, prefix });
  // Both releases' stores on one connection, as two copies of the package in one app would have them: each
  // runs its own scripts (this release registers them under names that carry their text's hash).
  const old = (await import(pathToFileURL(release.redisEntry).href)) as RedisModule;
  const oldStore = new old.ReceiptStore({ redis, prefix });
  const previousScripts = readdirSync(path.join(release.root, 'lua'), { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith('.lua'))
    .map((entry) => readFileSync(path.join(entry.parentPath, entry.name), 'utf8'))
    .join('\n');

  const spawned: { release: Release; worker: WorkerProcess }[] = [];
  const spawn = async (which: Release) => {
    const worker = await spawnWorkerProcess('deploy-worker', {
      REDIS_URL: server.url,
      PREFIX: prefix,
      QUEUE,
      RELEASE: which,
      LIB_ENTRY: which === 'previous' ? release.entry : CURRENT_ENTRY,
      FREEZE_POST: '1',
    });
    everyWorker.push(worker);
    spawned.push({ release: which, worker });
    return { release: which, worker };
  };
  const fleet: { release: Release; worker: WorkerProcess }[] = [];
  let kills = 0;
  const replace = async (slot: number, which: Release) => {
    kills++;
    await fleet[slot]!.worker.signal('SIGKILL');
    fleet[slot] = await spawn(which);
  };
  /**
   * Waits until a worker of the release froze after landing a post_message
   * (one per release), and SIGKILLs it there, replacing it in its slot,
   * unless the deploy has already killed it.
   */
  const killFrozen = async (which: Release) => {
    const frozen = await waitUntil(
      async () => spawned.find((s) => s.release === which && s.worker.messages.some((m) => m.type === 'frozen')),
      (found) => found !== undefined,
      STEP_TIMEOUT_MS,
      `a ${which} worker to freeze after its effect`,
    );
    const slot = fleet.findIndex((s) => s.worker === frozen!.worker);
    if (slot >= 0) await replace(slot, 'current');
  };

  let enqueued = 0;
  const turns = new Map<string, ReturnType<typeof turn>>();
  function turn(batch: string, i: number) {
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
  /** A batch of turns; every third one is enqueued twice, as a redelivered turn would be. */
  const enqueue = async (data: ReturnType<typeof turn>, times = 1): Promise<Job[]> => {
    const jobs: Job[] = [];
    for (let n = 0; n < times; n++) jobs.push(await queue.add('turn', data, JOB_OPTIONS));
    enqueued += times;
    return jobs;
  };
  const batch = async (name: string, size: number): Promise<Job[]> => {
    const jobs: Job[] = [];
    for (let i = 0; i < size; i++) {
      const data = turn(name, i);
      turns.set(`${name}${i}`, data);
      jobs.push(...(await enqueue(data, i % 3 === 0 ? 2 : 1)));
    }
    return jobs;
  };
  const drain = async (what: string) => {
    await waitUntil(
      () => queue.getJobCounts('completed', 'failed'),
      (c) => (c.completed ?? 0) + (c.failed ?? 0) >= enqueued,
      DRAIN_TIMEOUT_MS,
      what,
    );
  };

  try {
    // Before the deploy: the previous release alone.
    fleet.push(...(await Promise.all([spawn('previous'), spawn('previous'), spawn('previous')])));
    await batch('a', 10);
    await waitUntil(
      () => queue.getJobCounts('completed'),
      (c) => (c.completed ?? 0) >= 5,
      DRAIN_TIMEOUT_MS,
      'the first jobs to complete',
    );

    // The deploy: each previous worker is SIGKILLed (the frozen one first, mid-call) and replaced by a current one,
    // while turns keep coming and both releases take them; one current worker is killed on the way too.
    await batch('b', 10);
    await killFrozen('previous');
    for (let slot = 0; slot < fleet.length; slot++) {
      if (fleet[slot]!.release === 'previous') await replace(slot, 'current');
      if (slot === 1) await replace(0, 'current');
    }

    // After it: new turns, and the first turns again (the current release meets the previous one's receipts).
    await batch('c', 8);
    for (const i of [0, 1, 2, 3]) await enqueue(turns.get(`a${i}`)!);
    await killFrozen('current');
    await drain('every job to finish after the deploy');

    const runs = [...new Set([...turns.values()].map((t) => t.runId))];
    const listAll = async (reader: Pick<ReceiptStore, 'listRun'>) =>
      (await Promise.all(runs.map((run) => reader.listRun('acme', run)))).flat();

    // Ambiguous receipts, each resolved with the other release's tools, from what the outbox says landed:
    // first those the previous release wrote, with this release's store...
    const outbox = await readOutbox(redis, prefix);
    const landed = (record: ReceiptRecord) =>
      outbox.some((e) => e.tool === record.key.toolName && e.idempotencyKey === idempotencyKeyFor(record.key));
    const verdictOf = (record: ReceiptRecord) =>
      landed(record)
        ? ({
            attemptsSeen: record.attempts,
            epochSeen: record.epoch,
            outcome: 'completed',
            result: { posted: true, resolvedBy: 'operator' },
          } as const)
        : ({ attemptsSeen: record.attempts, epochSeen: record.epoch, outcome: 'failed', error: 'not in the provider log' } as const);
    const ambiguous = await store.listAmbiguous();
    expect(new Set(ambiguous.map((r) => r.schema))).toEqual(new Set([1, ORDINARY_RECEIPT_SCHEMA]));
    for (const record of ambiguous.filter((r) => r.schema === 1)) await store.resolve(record.key, verdictOf(record));

    // What the previous release does not know of a receipt (fields its scripts never name) must outlive its
    // writes: the resolves below, and its workers after the rollback. Read after this release's last write.
    const unknownToPrevious = async () => {
      const fields = new Map<string, Record<string, string>>();
      for (const { redisKey } of await listAll(store)) {
        const hash = await redis.hgetall(redisKey);
        fields.set(
          redisKey,
          Object.fromEntries(Object.entries(hash).filter(([field]) => !previousScripts.includes(`'${field.replace(/:.*$/s, ':')}'`))),
        );
      }
      return fields;
    };
    const beforePrevious = await unknownToPrevious();
    expect([...beforePrevious.values()].some((fields) => Object.keys(fields).length > 0)).toBe(true);

    // ...then those this release wrote, with the previous release's CLI (the first) and store (the rest).
    for (const [i, record] of ambiguous.filter((r) => r.schema !== 1).entries()) {
      const verdict = verdictOf(record);
      if (i > 0) {
        await oldStore.resolve(record.key, verdict);
        continue;
      }
      const ran = await previousCli(
        [
          'resolve',
          record.redisKey,
          '--attempts',
          String(record.attempts),
          '--epoch',
          record.epoch,
          ...(verdict.outcome === 'completed'
            ? ['--completed', '--result', JSON.stringify(verdict.result)]
            : ['--failed', '--error', verdict.error]),
        ],
        prefix,
      );
      expect(ran, ran.stderr).toMatchObject({ code: 0 });
    }
    expect(await store.listAmbiguous()).toEqual([]);
    expect(await oldStore.listAmbiguous()).toEqual([]);

    // A rollback: the previous release takes the queue back and meets the current release's receipts.
    const afterDeploy = new Map((await listAll(store)).map((r) => [r.redisKey, r]));
    await Promise.all(fleet.map((_, slot) => replace(slot, 'previous')));
    const replays = (await Promise.all([0, 1, 2, 3, 4, 5, 6, 7].map((i) => enqueue(turns.get(`c${i}`)!)))).flat();
    await drain('every job to finish after the rollback');
    await Promise.all(fleet.map((s) => s.worker.signal('SIGKILL')));

    // At most once, across both releases, the deploy and the rollback.
    const effects = await readOutbox(redis, prefix);
    expect(duplicateEffects(effects)).toEqual([]);
    expect(new Set(effects.map((e) => (e as { release?: string }).release))).toEqual(new Set(['previous', 'current']));
    const decisions = await redis.hgetall(`${prefix}:deploy:decisions`);
    for (const key of ['previous:execute', 'current:execute', 'previous:replay', 'current:replay'])
      expect(Number(decisions[key] ?? 0), key).toBeGreaterThan(0);

    // The previous release's workers replayed every call the current one had completed, with the recorded result.
    let replayed = 0;
    for (const job of replays) {
      const done = (await queue.getJob(job.id!))!;
      const data = done.data as ReturnType<typeof turn>;
      const results = (done.returnvalue as ToolJobResult | undefined)?.results ?? [];
      for (const call of data.calls) {
        const receiptKey = store.redisKey({
          tenantId: data.tenantId,
          runId: data.runId,
          toolName: call.name,
          argsHash: await toolCallArgsHash(call.input),
        });
        const before = afterDeploy.get(receiptKey);
        if (before?.status !== 'completed' || before.schema !== ORDINARY_RECEIPT_SCHEMA || before.resolvedMs !== null) continue;
        const result = results.find((r) => r.tool_use_id === call.id);
        expect(result, `${receiptKey} in job ${done.id} (${done.failedReason ?? 'completed'})`).toMatchObject({
          outcome: 'replayed',
          content: (before.result as { content: string }).content,
        });
        replayed++;
      }
    }
    expect(replayed).toBeGreaterThan(0);

    // Every receipt reads the same through either release's store, whichever wrote it.
    const current = await listAll(store);
    const previous = await listAll(oldStore);
    expect(previous.map(core)).toEqual(current.map(core));
    const layouts = new Set(current.map((r) => r.schema));
    expect(layouts).toEqual(new Set([1, ORDINARY_RECEIPT_SCHEMA]));
    const afterPrevious = await unknownToPrevious();
    for (const [key, fields] of beforePrevious) expect(afterPrevious.get(key), key).toMatchObject(fields);

    // Both releases count every receipt, whichever release wrote it and its counting entry.
    const byStatus: Record<string, number> = { running: 0, completed: 0, failed: 0 };
    for (const r of current) byStatus[r.status] = (byStatus[r.status] ?? 0) + 1;
    const listedByPair: Record<string, number> = {};
    for (const r of current) listedByPair[`${r.status}/${r.effect}`] = (listedByPair[`${r.status}/${r.effect}`] ?? 0) + 1;
    const byStatusAndEffect = (counts: readonly { status: string; effect: string; count: number }[]) =>
      Object.fromEntries(counts.map((c) => [`${c.status}/${c.effect}`, c.count]));
    const counted = await store.stats();
    const oldCounted = await oldStore.stats();
    expect(counted).toMatchObject({ total: current.length, byStatus, ambiguous: 0, readBy: 'counting-sets' });
    expect(oldCounted).toMatchObject({ total: current.length, byStatus, ambiguous: 0, readBy: 'counting-sets' });
    expect(byStatusAndEffect(counted.byStatusAndEffect)).toEqual(listedByPair);
    expect(byStatusAndEffect(oldCounted.byStatusAndEffect)).toEqual(listedByPair);
    const oldStats = await previousCli(['stats', '--json'], prefix);
    expect(JSON.parse(oldStats.stdout)).toMatchObject({ total: current.length, byStatus });

    // Each release's CLI on the other's receipts: show, run and ambiguous.
    const older = current.find((r) => r.schema === 1 && r.status === 'completed')!;
    const out = new Capture();
    await showCommand({ store, redis, out, args: { redisKey: older.redisKey, json: true } });
    expect(core(JSON.parse(out.text))).toEqual(core(previous.find((r) => r.redisKey === older.redisKey)!));
    const newer = current.find((r) => r.schema === ORDINARY_RECEIPT_SCHEMA && r.status === 'completed')!;
    const shown = await previousCli(['show', newer.redisKey, '--json'], prefix);
    expect(core(JSON.parse(shown.stdout))).toEqual(core(newer));
    const mixedRun = runs.find((run) => new Set(current.filter((r) => r.key.runId === run).map((r) => r.schema)).size === 2) ?? runs[0]!;
    const listed = await previousCli(['run', 'acme', mixedRun, '--json'], prefix);
    expect((JSON.parse(listed.stdout) as { receipts: object[] }).receipts.map(core)).toEqual(
      current.filter((r) => r.key.runId === mixedRun).map(core),
    );
    expect(JSON.parse((await previousCli(['ambiguous', '--json'], prefix)).stdout)).toEqual([]);

    const byLayout = (n: number) => current.filter((r) => r.schema === n).length;
    console.log(
      `rolling deploy (previous release from ${release.from}): ${enqueued} jobs, ${kills} workers SIGKILLed, ` +
        `${effects.length} effects, ${duplicateEffects(effects).length} duplicate; ${current.length} receipts ` +
        `(${byLayout(1)} layout 1, ${byLayout(ORDINARY_RECEIPT_SCHEMA)} layout ${ORDINARY_RECEIPT_SCHEMA}); ` +
        `${ambiguous.length} ambiguous resolved across releases; ${replayed} replays by the previous release; ` +
        `decisions ${JSON.stringify(decisions)}`,
    );
  } finally {
    await Promise.all(fleet.map((s) => s.worker.signal('SIGKILL')));
    await queue.close();
    redis.disconnect();
  }
}, 170_000);
