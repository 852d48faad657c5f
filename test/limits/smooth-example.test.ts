/**
 * The worked example of docs/limits.md's kinds (examples/smooth-limits.ts),
 * run through a real worker: eleven searches of one tenant in a minute, the
 * eleventh refused with when it may run (a sliding window); six summaries
 * at once, five run as the bucket's burst and the sixth waits for the next
 * unit, about 2 s later on the server clock, then runs.
 */
import { Worker } from 'bullmq';
import { describe, expect, it } from 'vitest';
import { completions, providerLimitedProcessor, searchesPerMinute } from '../../examples/smooth-limits.js';
import type { ToolJobResult } from '../../src/bullmq/index.js';
import { LimitStore } from '../../src/limits/index.js';
import { call, jobData, useLanes } from '../bullmq/fixture.js';

const lane = useLanes();

describe('the worked example of the kinds of limits in docs/limits.md', () => {
  it('refuses the eleventh search in a minute, and runs six summaries as a burst of five and one 2 s later', async () => {
    const l = await lane();
    const searched: string[] = [];
    const summarized: number[] = [];
    const processor = providerLimitedProcessor(
      l.redis,
      async (query) => {
        searched.push(query);
        return `results for ${query}`;
      },
      async () => {
        summarized.push(Date.now());
        return 'a summary';
      },
      l.prefix,
    );
    const connection = l.redis.duplicate({ maxRetriesPerRequest: null });
    const worker = new Worker(l.queueName, processor, { connection, prefix: l.prefix });
    processor.attach(worker);
    try {
      const searches = Array.from({ length: 11 }, (_, i) => call('web_search', { query: `q${i}` }));
      const job = await l.run(jobData(searches, { tenantId: 'acme' }));
      const results = (job.returnvalue as ToolJobResult).results;
      expect(results.map((r) => r.outcome)).toEqual([...Array<string>(10).fill('executed'), 'rejected']);
      expect(results[10]!.content).toMatch(
        /^This call was not run: the limit "searches" \(at most 10 per tenant in any 1 min\) has no room for it before \d{4}-/,
      );
      expect(searched).toHaveLength(10);

      const store = new LimitStore({ redis: l.redis, prefix: l.prefix });
      const summaries = Array.from({ length: 6 }, (_, i) => call('summarize', { text: `page ${i}` }));
      const parked = await l.add(jobData(summaries, { tenantId: 'acme' }));
      // Five at once; the sixth waits (the job parked on the server clock) for the bucket's next unit.
      await expect.poll(() => parked.getState(), { timeout: 10_000 }).toBe('delayed');
      expect(summarized).toHaveLength(5);
      const waiting = await store.usage(completions, {});
      expect(waiting).toMatchObject({ kind: 'bucket', used: 5, left: 0 });
      expect(waiting.nextFreeAtMs! - waiting.nowMs).toBeLessThanOrEqual(2000);
      await expect.poll(() => parked.getState(), { timeout: 15_000 }).toBe('completed');
      expect(summarized).toHaveLength(6);
      expect(await store.usage(searchesPerMinute, { tenantId: 'acme' })).toMatchObject({ kind: 'sliding', used: 10, left: 0 });
    } finally {
      await worker.close();
      connection.disconnect();
    }
  });
});
