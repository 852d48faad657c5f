/**
 * Group commit under a race: 64 jobs' worth of concurrent claims over
 * overlapping calls, on four worker stores of sixteen jobs each. Redis'
 * own record of what it ran (MONITOR, batches expanded in order) is replayed
 * through a model of one receipt alone: every decision a job got must be
 * the one its claim would have got alone at that point, and every effect
 * runs once.
 */
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import type { ToolCallReceiptKey } from '../../src/core/identity.js';
import { luaScript } from '../../src/redis/scripts/scripts.js';
import { commitBatchEntries } from '../support/commit-batch.js';
import { freshKey, useRedis, waitUntil } from '../support/redis-fixture.js';

const fixture = useRedis();
const STORES = 4;
const JOBS_PER_STORE = 16;
const CALLS_PER_RUN = 8;
const ROUNDS = 6;

type Kind = 'execute' | 'wait' | 'replay';
/** One receipt transition as Redis ran it. */
type Ran = { kind: 'claim'; receipt: string; job: string } | { kind: 'complete'; receipt: string; attempt: number };

/** Each script by what names it on the wire: its SHA-1 (EVALSHA) or its function's name (FCALL). */
const named = (file: string) => new Set([luaScript(file).sha, luaScript(file).function?.name]);
const SHA = {
  claim: named('claim-4.lua'),
  complete: named('complete-4.lua'),
  batch: named('commit-batch-N.lua'),
};

/** The claims and completes in MONITOR's lines, batches expanded in order. */
function transitions(commands: readonly string[][]): { ran: Ran[]; batches: string[][] } {
  const ran: Ran[] = [];
  const batches: string[][] = [];
  for (const args of commands) {
    const name = args[0]?.toLowerCase();
    // Scripts went by text before the monitor started (see the warm-up), so each is an EVALSHA or an FCALL here.
    expect(name).not.toBe('eval');
    if (name !== 'evalsha' && name !== 'fcall') continue;
    const sha = args[1]!;
    const count = Number(args[2]);
    const keys = args.slice(3, 3 + count);
    const argv = args.slice(3 + count);
    if (SHA.claim.has(sha)) ran.push({ kind: 'claim', receipt: keys[0]!, job: argv[11]! });
    else if (SHA.complete.has(sha)) ran.push({ kind: 'complete', receipt: keys[0]!, attempt: Number(argv[0]) });
    else if (SHA.batch.has(sha)) {
      const receipts: string[] = [];
      for (const entry of commitBatchEntries(keys, argv)) {
        // One-call jobs: no complete here claims a next call.
        expect(entry.kind).not.toBe('complete-claim');
        const receipt = entry.keys[0]!;
        receipts.push(receipt);
        ran.push(
          entry.kind === 'claim'
            ? { kind: 'claim', receipt, job: entry.args[11]! }
            : { kind: 'complete', receipt, attempt: Number(entry.args[0]) },
        );
      }
      batches.push(receipts);
    }
  }
  return { ran, batches };
}

/** What each claim would have decided alone, in the order Redis ran the transitions (leases never lapse here). */
function decidedAlone(ran: readonly Ran[]): Map<string, Kind> {
  const status = new Map<string, 'running' | 'completed'>();
  const decided = new Map<string, Kind>();
  for (const step of ran) {
    const now = status.get(step.receipt);
    if (step.kind === 'claim') {
      decided.set(step.job, now === undefined ? 'execute' : now === 'running' ? 'wait' : 'replay');
      if (now === undefined) status.set(step.receipt, 'running');
    } else if (now === 'running' && step.attempt === 1) {
      status.set(step.receipt, 'completed');
    }
  }
  return decided;
}

/**
 * Sends ECHO of a fresh marker and waits until the monitor has seen it: the
 * monitor is then on, and has seen everything Redis ran before it.
 */
async function echoed(commands: readonly string[][], label: string): Promise<void> {
  const marker = `${label}-${randomBytes(4).toString('hex')}`;
  const seen = () => commands.some((c) => c[0]?.toLowerCase() === 'echo' && c[1] === marker);
  const sender = fixture.connect();
  await waitUntil(async () => {
    if (!seen()) await sender.echo(marker);
    return seen();
  }, Boolean);
}

describe('group commit under a race', () => {
  it(`${STORES * JOBS_PER_STORE} concurrent jobs over overlapping calls: each effect once, each decision as alone`, async () => {
    const stores = Array.from({ length: STORES }, (_, i) => fixture.store({ owner: `worker-${i}` }));
    // Warm-up: each store sends claim, complete and a batch of each once, so the server has them by SHA.
    for (const store of stores) {
      const keys = [freshKey(), freshKey(), freshKey()];
      const claims = await Promise.all(keys.map((key) => store.claim(key, { effect: 'opaque' })));
      await Promise.all(claims.map((claim, i) => store.complete(keys[i]!, claim.fence!, 'warm')));
    }
    const monitor = await fixture.connect().monitor();
    const commands: string[][] = [];
    monitor.on('monitor', (_time: string, args: string[]) => commands.push(args));
    await echoed(commands, 'race-start');

    const live = new Map<string, { kind: Kind; receipt: string; result?: unknown }>();
    const effects = new Map<string, string[]>();
    for (let round = 0; round < ROUNDS; round++) {
      const run = freshKey();
      const calls: ToolCallReceiptKey[] = Array.from({ length: CALLS_PER_RUN }, (_, i) => ({ ...run, argsHash: `h${i}` }));
      const job = async (store: (typeof stores)[number], s: number, j: number): Promise<void> => {
        // Jobs 2k and 2k + 1 make the same call, so a batch holds both.
        const key = calls[Math.floor(j / 2) % CALLS_PER_RUN]!;
        for (let attempt = 0; ; attempt++) {
          const id = `${round}-${s}-${j}-${attempt}`;
          const claim = await store.claim(key, { effect: 'opaque', leaseMs: 60_000, job: { queue: 'race', prefix: 'bull', id } });
          const jobText = JSON.stringify({ queue: 'race', prefix: 'bull', id });
          live.set(jobText, { kind: claim.decision.kind as Kind, receipt: store.redisKey(key), result: claim.result });
          if (claim.decision.kind === 'execute') {
            const name = store.redisKey(key);
            effects.set(name, [...(effects.get(name) ?? []), id]);
            await sleep(Math.floor(Math.random() * 3));
            await store.complete(key, claim.fence!, { by: id });
            return;
          }
          if (claim.decision.kind === 'replay') return;
          expect(claim.decision.kind).toBe('wait');
          await sleep(1 + Math.floor(Math.random() * 3));
        }
      };
      await Promise.all(stores.flatMap((store, s) => Array.from({ length: JOBS_PER_STORE }, (_, j) => job(store, s, j))));
    }

    await echoed(commands, 'race-done');
    monitor.disconnect();

    const { ran, batches } = transitions(commands);
    expect(stores.reduce((n, s) => n + s.groupCommitted.batches, 0)).toBeGreaterThan(0);
    expect(batches.length).toBeGreaterThan(0);
    // Batches held claims of one call next to each other, so order inside a batch mattered.
    expect(batches.some((receipts) => new Set(receipts).size < receipts.length)).toBe(true);

    const alone = decidedAlone(ran);
    expect(alone.size).toBe(live.size);
    for (const [jobText, got] of live) expect([jobText, got.kind]).toEqual([jobText, alone.get(jobText)]);

    // Each effect once, and every replay returns what its one execution stored.
    expect(effects.size).toBe(ROUNDS * CALLS_PER_RUN);
    for (const ids of effects.values()) expect(ids).toHaveLength(1);
    const executedBy = new Map([...effects].map(([receipt, [id]]) => [receipt, id]));
    const replays = [...live.values()].filter((d) => d.kind === 'replay');
    expect(replays.length).toBeGreaterThan(0);
    for (const replay of replays) expect(replay.result).toEqual({ by: executedBy.get(replay.receipt) });
  });
});
