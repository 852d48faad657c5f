/**
 * Races of whole turns: 64 turns of three calls each, over calls that overlap
 * across turns (same tenant, run, tool and arguments), on four workers with
 * a store and connection each, all at once. One after another, each complete
 * claims the next call in the same script; side by side, one script claims
 * the whole group; either way the claims race with other workers' completes
 * and claims. Every effect must run exactly once, and every turn end with
 * each call's one result, executed or replayed.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { NOOP_OBSERVER, defineTool, type ToolCallObserver, type ToolJobResult } from '../../src/bullmq/index.js';
import { call, useLanes } from './fixture.js';

const lane = useLanes();

const TURNS = 64;
const RUNS = ['run-0', 'run-1', 'run-2', 'run-3'];
/** The distinct calls of each run; every turn takes three of them, in a rotating order. */
const POOL = [
  { name: 'send_email', n: 1 },
  { name: 'create_ticket', n: 1 },
  { name: 'send_email', n: 2 },
  { name: 'create_ticket', n: 2 },
];

describe.each([
  ['one after another (each complete claims the next call)', false],
  ['side by side (one script claims the group)', true],
])('64 concurrent turns over overlapping calls on four workers, %s', (_how, parallel) => {
  it("runs each effect once; every turn ends with each call's one result", async () => {
    const l = await lane();
    const effects = new Map<string, string[]>();
    let executions = 0;
    const tool = (name: string) =>
      defineTool({
        name,
        input: z.object({ n: z.number() }),
        effect: 'opaque',
        destructive: false,
        async execute({ n }, ctx) {
          const id = `${ctx.runId}:${name}:${n}`;
          const result = `${id} effect #${++executions}`;
          effects.set(id, [...(effects.get(id) ?? []), result]);
          // A few ms of work, so completes and the claims they carry interleave across workers.
          await new Promise((resolve) => setTimeout(resolve, Math.floor(Math.random() * 15)));
          return result;
        },
      });
    const tools = [tool('send_email'), tool('create_ticket')];
    const roundTrips = new Map<string, number>();
    const observer: ToolCallObserver = {
      callStarted: (started) => ({
        ...NOOP_OBSERVER.callStarted(started),
        roundTrip: (name, fn) => {
          roundTrips.set(name, (roundTrips.get(name) ?? 0) + 1);
          return fn();
        },
      }),
    };
    for (let w = 0; w < 4; w++) {
      l.worker({ tools, telemetry: observer, maxWaitMs: 50, waitJitterMs: 25 }, { concurrency: 8 });
    }

    const turns = Array.from({ length: TURNS }, (_, i) => {
      const runId = RUNS[i % RUNS.length]!;
      const picked = [0, 1, 2].map((k) => POOL[(Math.floor(i / RUNS.length) + k) % POOL.length]!);
      return { tenantId: 'acme', runId, parallel, calls: picked.map((p, k) => call(p.name, { n: p.n }, `toolu_${i}_${k}`)) };
    });
    const jobs = await Promise.all(turns.map((data) => l.add(data, { attempts: 3 })));
    const done = await Promise.all(jobs.map((job) => l.settle(job, 60_000)));

    expect(done.map((job) => job.failedReason ?? null)).toEqual(done.map(() => null));
    // Each distinct call's effect ran exactly once.
    expect(effects.size).toBe(RUNS.length * POOL.length);
    for (const [id, runs] of effects) expect(runs, id).toHaveLength(1);
    // Every turn completed, each call with the one result its effect produced, executed or replayed (a turn
    // that waited on a call comes back and replays what it had executed before).
    for (const [i, job] of done.entries()) {
      const { results } = job.returnvalue as ToolJobResult;
      const { runId, calls } = turns[i]!;
      expect(results.map((r) => r.tool_use_id)).toEqual(calls.map((c) => c.id));
      for (const [k, block] of results.entries()) {
        const c = calls[k]!;
        expect(['executed', 'replayed']).toContain(block.outcome);
        expect(block.content).toBe(effects.get(`${runId}:${c.name}:${(c.input as { n: number }).n}`)![0]);
      }
    }
    // The fused path ran: completes claimed next calls, or groups were claimed in one script.
    expect(roundTrips.get(parallel ? 'claimGroup' : 'completeAndClaim') ?? 0).toBeGreaterThan(0);
    // Every receipt settled, and the counting sets agree with the receipts.
    const stats = await l.store.stats({ tenantId: 'acme' });
    expect(stats.byStatus).toEqual({ running: 0, completed: effects.size, failed: 0 });
    expect(stats.byStatus).toEqual((await l.store.stats({ tenantId: 'acme', scan: true })).byStatus);
  });
});
