import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { z } from 'zod';
import { defineTool, withToolReceipts } from 'bullmq-tool-receipts';
import { testJob } from 'bullmq-tool-receipts/testing';

const url = process.env.REDIS_URL;
if (!url) throw new Error('set REDIS_URL to a Redis the test may write to, e.g. redis://127.0.0.1:6379');

let sent = 0;
const sendEmail = defineTool({
  name: 'send_email',
  input: z.object({ to: z.email(), subject: z.string() }),
  effect: 'opaque',
  destructive: false,
  execute: () => ({ sent: ++sent }),
});

const redis = new Redis(url, { commandTimeout: 5_000 });
const processor = withToolReceipts({ redis, prefix: 'test', tools: [sendEmail] });
// A fresh run id each time, so a second run of this test starts from no receipts.
const data = {
  tenantId: 'acme',
  runId: `test-${randomUUID()}`,
  calls: [{ id: 'toolu_1', name: 'send_email', input: { to: 'ada@example.com', subject: 'Hi' } }],
};
const first = await processor(testJob(data).job, 'token');
const again = await processor(testJob(data).job, 'token');
console.log(first.results[0]?.outcome, again.results[0]?.outcome, `sent ${sent}`); // executed replayed sent 1
await redis.quit();
