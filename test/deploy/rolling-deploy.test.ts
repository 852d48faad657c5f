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
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { expect, it } from 'vitest';
import { duplicateEffects, readOutbox } from '../../examples/outbox-tools.js';
import { ORDINARY_RECEIPT_SCHEMA, type ReceiptStore } from '../../src/redis/index.js';
import { showCommand } from '../../src/cli/commands/show.js';
import { Capture } from '../cli/support.js';
import { waitUntil } from '../support/redis-fixture.js';
import {
  core,
  deployFleet,
  DRAIN_TIMEOUT_MS,
  previousCli as runPreviousCli,
  resolveArgs,
  useReleaseAndRedis,
  verdictOf,
} from '../support/rolling-deploy.js';

const made = useReleaseAndRedis();

it('previous and current workers share one queue under SIGKILLs, a deploy and a rollback: nothing lands twice, each reads what the other wrote', async () => {
  const { release, server } = made;
  const previousCli = (args: readonly string[], prefix: string) => runPreviousCli(release, server, args, prefix);
  const prefix = `${server.prefix}deploy`;
  const deploy = await deployFleet({ release, server, prefix });
  const { redis, queue, store, oldStore, fleet, replace, killFrozen, turns, enqueue, batch, drain } = deploy;
  const previousScripts = readdirSync(path.join(release.root, 'lua'), { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith('.lua'))
    .map((entry) => readFileSync(path.join(entry.parentPath, entry.name), 'utf8'))
    .join('\n');

  try {
    // Before the deploy: the previous release alone.
    fleet.push(...(await Promise.all([deploy.spawn('previous'), deploy.spawn('previous'), deploy.spawn('previous')])));
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
    await killFrozen('previous', 'current');
    for (let slot = 0; slot < fleet.length; slot++) {
      if (fleet[slot]!.kind === 'previous') await replace(slot, 'current');
      if (slot === 1) await replace(0, 'current');
    }

    // After it: new turns, and the first turns again (the current release meets the previous one's receipts).
    await batch('c', 8);
    for (const i of [0, 1, 2, 3]) await enqueue(turns.get(`a${i}`)!);
    await killFrozen('current', 'current');
    await drain('every job to finish after the deploy');

    const runs = [...new Set([...turns.values()].map((t) => t.runId))];
    const listAll = (reader: Pick<ReceiptStore, 'listRun'>) => deploy.listAll(reader);

    // Ambiguous receipts, each resolved with the other release's tools, from what the outbox says landed:
    // first those the previous release wrote, with this release's store...
    const outbox = await readOutbox(redis, prefix);
    const ambiguous = await store.listAmbiguous();
    expect(new Set(ambiguous.map((r) => r.schema))).toEqual(new Set([1, ORDINARY_RECEIPT_SCHEMA]));
    for (const record of ambiguous.filter((r) => r.schema === 1)) await store.resolve(record.key, verdictOf(outbox, record));

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
      const verdict = verdictOf(outbox, record);
      if (i > 0) {
        await oldStore.resolve(record.key, verdict);
        continue;
      }
      const ran = await previousCli(resolveArgs(record, verdict), prefix);
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
    const replayed = await deploy.expectReplayed(replays, afterDeploy, ORDINARY_RECEIPT_SCHEMA);
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
      `rolling deploy (previous release from ${release.from}): ${deploy.enqueued} jobs, ${deploy.kills} workers SIGKILLed, ` +
        `${effects.length} effects, ${duplicateEffects(effects).length} duplicate; ${current.length} receipts ` +
        `(${byLayout(1)} layout 1, ${byLayout(ORDINARY_RECEIPT_SCHEMA)} layout ${ORDINARY_RECEIPT_SCHEMA}); ` +
        `${ambiguous.length} ambiguous resolved across releases; ${replayed} replays by the previous release; ` +
        `decisions ${JSON.stringify(decisions)}`,
    );
  } finally {
    await deploy.close();
  }
}, 170_000);
