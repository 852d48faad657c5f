/**
 * The scenario of a waiting job parked on the Redis server's clock, shared by
 * the Redis suite (server-clock-wait.test.ts, a worker ten minutes fast and
 * one ten minutes slow) and the PostgreSQL one (postgres.test.ts, a slow
 * worker only): another attempt holds the call, a worker whose clock is
 * `skewMs` off parks the job, the job's due time is checked against the
 * server clock, and once the held attempt completes a worker with a correct
 * clock replays it. `whileParked` checks the job before the skewed worker is
 * killed. Returns the job as it ended.
 */
import { expect } from 'vitest';
import { z } from 'zod';
import type { Job } from 'bullmq';
import { sha256Digest, toolCallArgsHash } from '../../src/core/index.js';
import { defineTool, type ToolJobResult } from '../../src/bullmq/index.js';
import { call, jobData, type Lane } from './fixture.js';

export const TEN_MINUTES = 10 * 60_000;
const MAX_WAIT_MS = 1500;

export async function parkOnServerClock(l: Lane, skewMs: number, label: string, whileParked?: (job: Job) => Promise<void>): Promise<Job> {
  const data = jobData([call('slow_sync', { label })]);
  const key = {
    tenantId: data.tenantId,
    runId: data.runId,
    toolName: 'slow_sync',
    argsHash: await toolCallArgsHash({ label }, sha256Digest),
  };
  // Another attempt holds the call with a live lease, so the worker must wait.
  const held = await l.store.claim(key, { effect: 'resumable', leaseMs: 60_000 });
  expect(held.decision).toEqual({ kind: 'execute', attempt: 1 });

  const delayed = new Promise<number>((resolve) => l.events.once('delayed', ({ delay }) => resolve(Number(delay))));
  const skewed = await l.spawn({ CLOCK_SKEW_MS: String(skewMs), MAX_WAIT_MS: String(MAX_WAIT_MS) });
  const parked = await l.add(data, { attempts: 1 });
  const dueAt = await delayed;
  const [seconds, micros] = await l.redis.time();
  const serverNow = Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
  // Due within the wait (plus jitter), counted on the server clock; generous margins for a loaded machine.
  expect(dueAt).toBeGreaterThan(serverNow - 5_000);
  expect(dueAt).toBeLessThan(serverNow + MAX_WAIT_MS + 5_000);
  await whileParked?.(parked);
  await skewed.signal('SIGKILL');

  // The live attempt finishes; a worker with a correct clock replays it soon after.
  await l.store.complete(key, held.fence!, { content: 'synced by the first attempt' });
  const slowSync = defineTool({
    name: 'slow_sync',
    input: z.object({ label: z.string() }),
    effect: 'resumable',
    destructive: false,
    execute: () => {
      throw new Error('must not run: the call completed elsewhere');
    },
  });
  l.worker({ tools: [slowSync] }, { lockDuration: 1000, stalledInterval: 500 });
  const done = await l.settle(parked, 20_000);
  expect((done.returnvalue as ToolJobResult).results[0]).toMatchObject({ outcome: 'replayed', content: 'synced by the first attempt' });
  return done;
}
