/**
 * A waiting job is parked on the Redis server's clock: a worker whose own
 * clock is ten minutes off parks it where the rest of the fleet finds it on
 * time. The skewed worker is a real process with its Date.now shifted.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { sha256Digest, toolCallArgsHash } from '../../src/core/index.js';
import { defineTool, type ToolJobResult } from '../../src/bullmq/index.js';
import { call, jobData, useLanes } from './fixture.js';

const lane = useLanes();
const TEN_MINUTES = 10 * 60_000;
const MAX_WAIT_MS = 1500;

describe.each([
  ['fast', TEN_MINUTES],
  ['slow', -TEN_MINUTES],
])('a worker whose clock runs ten minutes %s', (_name, skewMs) => {
  it('parks a waiting job due on the server clock, and a correct worker picks it up on time', async () => {
    const l = await lane();
    const data = jobData([call('slow_sync', { label: 'skew' })]);
    const key = { tenantId: data.tenantId, runId: data.runId, toolName: 'slow_sync', argsHash: await toolCallArgsHash({ label: 'skew' }, sha256Digest) };
    // Another attempt holds the call with a live lease, so the worker must wait.
    const held = await l.store.claim(key, { effect: 'resumable', leaseMs: 60_000 });
    expect(held.decision).toEqual({ kind: 'execute', attempt: 1 });

    const delayed = new Promise<number>((resolve) => l.events.once('delayed', ({ delay }) => resolve(Number(delay))));
    const skewed = await l.spawn({ CLOCK_SKEW_MS: String(skewMs), MAX_WAIT_MS: String(MAX_WAIT_MS) });
    const job = await l.add(data, { attempts: 1 });
    const dueAt = await delayed;
    const [seconds, micros] = await l.redis.time();
    const serverNow = Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
    // Due within the wait (plus jitter), counted on the server clock; generous margins for a loaded machine.
    expect(dueAt).toBeGreaterThan(serverNow - 5_000);
    expect(dueAt).toBeLessThan(serverNow + MAX_WAIT_MS + 5_000);
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
    const done = await l.settle(job, 20_000);
    expect((done.returnvalue as ToolJobResult).results[0]).toMatchObject({ outcome: 'replayed', content: 'synced by the first attempt' });
  });
});
