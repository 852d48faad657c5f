/**
 * The worked example of docs/limits.md (examples/limits.ts), run: four
 * emails of one tenant, the fourth refused with the limit's sentence; a run
 * spending its budget, its next purchase waiting; the counts as the CLI and
 * console read them.
 */
import { describe, expect, it } from 'vitest';
import { Worker } from 'bullmq';
import { emailsPerHour, limitedProcessor, spendPerRun } from '../../examples/limits.js';
import type { ToolJobResult } from '../../src/bullmq/index.js';
import { LimitStore, listLimitCounts } from '../../src/limits/index.js';
import { call, jobData, useLanes } from '../bullmq/fixture.js';
import { clearOfWindowEnd } from '../support/limit-windows.js';

const lane = useLanes();
/** How long the hour's window must still run when the test starts: its jobs run in it. */
const WINDOW_LEFT_MS = 20_000;

describe('the worked example of docs/limits.md', () => {
  it('refuses the fourth email of a tenant in the hour, and keeps a run within its budget', async () => {
    const l = await lane();
    const sent: string[] = [];
    const spent: number[] = [];
    const processor = limitedProcessor(
      l.redis,
      async (to) => void sent.push(to),
      async (cents) => void spent.push(cents),
      l.prefix,
    );
    const connection = l.redis.duplicate({ maxRetriesPerRequest: null });
    const worker = new Worker(l.queueName, processor, { connection, prefix: l.prefix });
    processor.attach(worker);
    try {
      // The emails' hour and the run's day (which ends at an hour's end too) each count the test's calls in one window.
      await clearOfWindowEnd(new LimitStore({ redis: l.redis, prefix: l.prefix }), emailsPerHour, { tenantId: 'acme' }, WINDOW_LEFT_MS);
      const emails = ['a', 'b', 'c', 'd'].map((to) => call('send_email', { to: `${to}@example.com` }));
      const job = await l.run(jobData(emails, { tenantId: 'acme' }));
      const results = (job.returnvalue as ToolJobResult).results;
      expect(results.map((r) => r.outcome)).toEqual(['executed', 'executed', 'executed', 'rejected']);
      expect(results[3]!.content).toMatch(
        /^This call was not run: the limit "emails" \(at most 3 per tenant every 1 h\) is used up until it resets at /,
      );
      expect(sent).toHaveLength(3);

      const buys = [400, 600].map((cents) => call('buy_credits', { cents }));
      const data = jobData(buys, { tenantId: 'acme' });
      const bought = await l.run(data);
      expect((bought.returnvalue as ToolJobResult).results.map((r) => r.outcome)).toEqual(['executed', 'executed']);
      const over = await l.add(jobData([call('buy_credits', { cents: 1 })], data));
      // Over the run's budget: parked until the next day on the server clock, not failed, not run.
      await expect.poll(() => over.getState(), { timeout: 10_000 }).toBe('delayed');
      expect(spent).toEqual([400, 600]);

      const store = new LimitStore({ redis: l.redis, prefix: l.prefix });
      expect(await store.usage(emailsPerHour, { tenantId: 'acme' })).toMatchObject({ used: 3, left: 0 });
      expect(await store.usage(spendPerRun, data)).toMatchObject({ used: 1_000, left: 0 });
      expect((await listLimitCounts(store, l.redis)).map((c) => [c.name, c.per, c.usage.used])).toEqual([
        ['emails', 'tenant', 3],
        ['spend', 'run', 1_000],
      ]);
    } finally {
      await worker.close();
      connection.disconnect();
    }
  });
});
