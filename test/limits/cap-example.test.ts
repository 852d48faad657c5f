/**
 * The worked example of docs/limits.md's in-flight caps
 * (examples/in-flight-caps.ts), run through a real worker: twenty `browse`
 * calls of one tenant in one turn, never more than 3 sessions open at once,
 * all run; three `transcribe` jobs at once, two run and the third refused
 * with the cap's sentence.
 */
import { Worker } from 'bullmq';
import { describe, expect, it } from 'vitest';
import { browsing, cappedProcessor } from '../../examples/in-flight-caps.js';
import type { ToolJobResult } from '../../src/bullmq/index.js';
import { LimitStore } from '../../src/limits/index.js';
import { call, jobData, useLanes } from '../bullmq/fixture.js';

const lane = useLanes();
const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('the worked example of in-flight caps in docs/limits.md', () => {
  it('keeps at most 3 browser sessions of a tenant open, runs all twenty, and refuses a third parallel transcription', async () => {
    const l = await lane();
    let open = 0;
    let most = 0;
    const processor = cappedProcessor(
      l.redis,
      async (url) => {
        most = Math.max(most, ++open);
        await pause(50);
        open--;
        return `page ${url}`;
      },
      async (audioUrl) => {
        await pause(300);
        return `transcript of ${audioUrl}`;
      },
      l.prefix,
    );
    const connection = l.redis.duplicate({ maxRetriesPerRequest: null });
    const worker = new Worker(l.queueName, processor, { connection, prefix: l.prefix, concurrency: 20 });
    processor.attach(worker);
    try {
      // Twenty jobs of one tenant at once, each one call.
      const jobs = await Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          l.add(jobData([call('browse', { url: `https://example.com/${i}` })], { tenantId: 'acme', runId: `r${i}` })),
        ),
      );
      const done = await Promise.all(jobs.map((job) => l.settle(job)));
      expect(done.map((job) => (job.returnvalue as ToolJobResult).results[0]!.outcome)).toEqual(Array<string>(20).fill('executed'));
      expect(most).toBe(3);
      const store = new LimitStore({ redis: l.redis, prefix: l.prefix });
      expect(await store.caps.usage(browsing, { tenantId: 'acme' })).toMatchObject({ concurrency: 3, held: 0, waiting: 0 });

      // Three transcriptions at once, each its own job: two run, the third finds both slots taken.
      const parallel = await Promise.all(
        Array.from({ length: 3 }, (_, i) =>
          l.add(jobData([call('transcribe', { audioUrl: `a${i}.mp3` })], { tenantId: 'acme', runId: `t${i}` })),
        ),
      );
      const outcomes = (await Promise.all(parallel.map((job) => l.settle(job)))).map(
        (job) => (job.returnvalue as ToolJobResult).results[0]!,
      );
      expect(outcomes.map((r) => r.outcome).sort()).toEqual(['executed', 'executed', 'rejected']);
      expect(outcomes.find((r) => r.outcome === 'rejected')!.content).toMatch(
        /^This call was not run: the in-flight cap "provider-requests" \(at most 2 at once\) has every slot taken/,
      );
    } finally {
      await worker.close();
      connection.disconnect();
    }
  });
});
