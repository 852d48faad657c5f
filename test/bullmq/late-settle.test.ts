/**
 * A late settle seen from the wrapper: an attempt stalls past its lease, a
 * claim reports the call ambiguous meanwhile, and then the attempt finishes.
 * Its settle stands, the receipt records it, and the operator is told (an
 * event and a pino warning). And a corrupt receipt met by the wrapper: the
 * job fails for good, nothing runs, nothing is written.
 */
import { describe, expect, it } from 'vitest';
import { pino } from 'pino';
import { z } from 'zod';
import { toolCallArgsHash } from '../../src/core/index.js';
import { defineTool, type LateSettleEvent, type ToolJobResult } from '../../src/bullmq/index.js';
import { waitUntil } from '../support/redis-fixture.js';
import { call, jobData, sendEmailSettlingLate, useLanes } from './fixture.js';

const lane = useLanes();
const LEASE_MS = 300;

describe('a late settle after an ambiguous verdict', () => {
  it('is recorded on the receipt, emitted as lateSettle and logged as a warning', async () => {
    const l = await lane();
    const logged: Array<{ level: number; msg: string; [k: string]: unknown }> = [];
    const logger = pino({ level: 'warn' }, { write: (line: string) => void logged.push(JSON.parse(line)) });
    // Awake again after the verdict: the lease keeper's next heartbeat finds it (contested) before the tool returns.
    const { tool, verdict } = sendEmailSettlingLate(l, (key) =>
      waitUntil(
        () => l.store.inspect(key),
        (r) => r?.lateHeartbeatMs != null,
        10_000,
        'a contested heartbeat',
      ).then(() => undefined),
    );
    const { processor } = l.worker({ tools: [tool], leaseMs: LEASE_MS, logger });
    const late: LateSettleEvent[] = [];
    processor.events.on('lateSettle', (e) => late.push(e));

    const job = await l.run(jobData([call('send_email', { to: 'a@x.test' }, 'toolu_late')]));
    expect(verdict()?.decision.kind).toBe('ambiguous');
    expect((job.returnvalue as ToolJobResult).results[0]).toMatchObject({ outcome: 'executed', content: 'sent to a@x.test' });

    const receipt = await l.receipt(job.data.tenantId, job.data.runId);
    expect(receipt).toMatchObject({ status: 'completed', attempts: 1, ambiguousMs: verdict()!.ambiguousMs });
    expect(receipt.lateSettle).toEqual({ atMs: receipt.completedMs, attempt: 1 });
    // And in the receipt's history, which later attempts keep.
    expect(receipt.history).toEqual([
      expect.objectContaining({
        seq: 1,
        what: 'late.completed',
        attempt: 1,
        atMs: receipt.completedMs,
        ambiguousMs: verdict()!.ambiguousMs,
        refused: false,
      }),
    ]);

    expect(late).toEqual([
      expect.objectContaining({
        attempt: 1,
        outcome: 'executed',
        ambiguousMs: verdict()!.ambiguousMs,
        settledMs: receipt.completedMs,
        receiptKey: receipt.redisKey,
        callId: 'toolu_late',
      }),
    ]);
    expect(logged.filter((line) => /already reported this attempt ambiguous/.test(line.msg))).toEqual([
      expect.objectContaining({ level: 40, attempt: 1, callId: 'toolu_late' }),
    ]);
    const warning = logged.find((line) => /settled late/.test(line.msg));
    expect(warning).toMatchObject({ level: 40, attempt: 1, outcome: 'executed', receiptKey: receipt.redisKey, callId: 'toolu_late' });
    // Later claims replay what the attempt recorded.
    expect(await l.store.claim(receipt.key, { effect: 'opaque' })).toMatchObject({ decision: { kind: 'replay' } });
  });
});

describe('a corrupt receipt met by the wrapper', () => {
  it('fails the job unrecoverably with receipt.corrupt, runs nothing and writes nothing', async () => {
    const l = await lane();
    let ran = 0;
    const tool = defineTool({
      name: 'send_email',
      input: z.object({ to: z.string() }),
      effect: 'opaque',
      destructive: false,
      async execute() {
        ran += 1;
        return 'sent';
      },
    });
    l.worker({ tools: [tool] });
    const data = jobData([call('send_email', { to: 'c@x.test' }, 'toolu_corrupt')]);
    const key = {
      tenantId: data.tenantId,
      runId: data.runId,
      toolName: 'send_email',
      argsHash: await toolCallArgsHash({ to: 'c@x.test' }),
    };
    // Once completed, then hand-edited: the status field is gone, the old result is still there.
    const first = await l.store.claim(key, { effect: 'opaque' });
    await l.store.complete(key, first.fence!, { content: 'the old result' });
    await l.redis.hdel(l.store.redisKey(key), 'status');
    const before = await l.redis.hgetall(l.store.redisKey(key));

    const job = await l.run(data, { attempts: 3 });
    expect(await job.getState()).toBe('failed');
    expect(job.failedReason).toMatch(/^receipt\.corrupt: /);
    expect(job.attemptsMade).toBe(1);
    expect(ran).toBe(0);
    expect(await l.redis.hgetall(l.store.redisKey(key))).toEqual(before);
  });
});
