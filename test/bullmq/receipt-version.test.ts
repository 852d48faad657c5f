/**
 * A worker that meets a receipt a newer release wrote (a rolling deploy of a
 * release that changed the receipt layout, or a rollback past one) runs
 * nothing, writes nothing, and fails the attempt with `receipt.version`, so
 * the job is retried, where a worker of the newer release can take it.
 */
import { expect, it } from 'vitest';
import { RECEIPT_SCHEMA_VERSION } from '../../src/redis/index.js';
import { call, flakyTool, jobData, RETRYING, useLanes } from './fixture.js';

const lane = useLanes();

it('a call whose receipt a newer release wrote is not run, the receipt is left as it is, and the job fails with receipt.version', async () => {
  const l = await lane();
  const charge = flakyTool('charge_card', () => undefined);
  l.worker({ tools: [charge.tool] });
  const data = jobData([call('charge_card', { n: 1 })]);
  const first = await l.run(data, RETRYING);
  expect(await first.getState()).toBe('completed');
  expect(charge.runs()).toBe(1);
  const receipt = await l.receipt(data.tenantId, data.runId);

  // The newer release reclaimed it and left it in its own layout.
  await l.redis.hset(receipt.redisKey, 'schema', String(RECEIPT_SCHEMA_VERSION + 1), 'status', 'running', 'lease_until_ms', '1');
  const before = await l.redis.hgetall(receipt.redisKey);
  const again = await l.run({ ...data, calls: [call('charge_card', { n: 1 }, data.calls[0]!.id)] }, RETRYING);

  expect(await again.getState()).toBe('failed');
  // Retried, not failed for good: a worker of the newer release may take it.
  expect(again.attemptsMade).toBe(RETRYING.attempts);
  expect(again.stacktrace?.[0]).toMatch(/^ReceiptVersionError: /);
  expect(again.failedReason).toContain(receipt.redisKey);
  expect(again.failedReason).toContain(`receipt schema ${RECEIPT_SCHEMA_VERSION + 1}`);
  expect(charge.runs()).toBe(1);
  expect(await l.redis.hgetall(receipt.redisKey)).toEqual(before);
});
