/**
 * `tool-receipts approvals`, `approve` and `deny` against a real Redis and a
 * real BullMQ worker: the pending list, a decision fenced on what was read
 * (printed) or given, the job promoted and run once, and every refusal one
 * sentence with exit 1 and nothing written. Through the command functions
 * and the real CLI process.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { parseArgs } from 'node:util';
import { defineTool, type ToolJobResult } from '../../src/bullmq/index.js';
import { listPendingApprovals, type PendingApproval } from '../../src/approvals/index.js';
import { approvalsCommand, approveSpec, decideCommand, type DecideArgs } from '../../src/cli/commands/approvals.js';
import type { OptionValues } from '../../src/cli/command.js';
import { AuditLog } from '../../src/redis/operators/audit-log.js';
import { call, jobData, useLanes, type Lane } from '../bullmq/fixture.js';
import { Capture, hasStackTrace, spawnCli } from './support.js';

const lane = useLanes({ queues: 'redis' });

function refundTool(options: { redact?: boolean } = {}) {
  const runs: number[] = [];
  const tool = defineTool({
    name: 'refund',
    input: z.object({ amount: z.number(), card: z.string() }),
    effect: 'opaque',
    approval: (args) => (args.amount > 100 ? { reason: `refund of ${args.amount}` } : false),
    ...(options.redact === false ? {} : { redact: (args: { amount: number; card: string }) => ({ amount: args.amount }) }),
    execute(args) {
      runs.push(args.amount);
      return `refunded ${args.amount}`;
    },
  });
  return { tool, runs };
}

async function pendingOf(l: Lane, count = 1): Promise<PendingApproval[]> {
  const until = Date.now() + 20_000;
  for (;;) {
    const pending = await listPendingApprovals({ redis: l.redis, prefix: l.prefix });
    if (pending.length >= count) return pending;
    if (Date.now() > until) throw new Error('no call became pending');
    await new Promise((r) => setTimeout(r, 50));
  }
}

function decideArgs(receiptKey: string, argv: string[]): DecideArgs {
  const { values, positionals } = parseArgs({ args: [receiptKey, ...argv], options: approveSpec.options, allowPositionals: true });
  return approveSpec.parse(values as OptionValues, positionals);
}

const cli = (l: Lane, args: string[]) => spawnCli([...args, '--prefix', l.prefix], l.url);

describe('tool-receipts approvals', () => {
  it('lists the pending calls with reason and what is shown, by tenant, and as JSON', async () => {
    const l = await lane();
    const { tool } = refundTool();
    l.worker({ tools: [tool] });
    await l.add(jobData([call('refund', { amount: 250, card: '4111111111111111' })], { tenantId: 'acme' }));
    await l.add(jobData([call('refund', { amount: 300, card: '4111111111111111' })], { tenantId: 'globex' }));
    const [first] = await pendingOf(l, 2);

    const out = new Capture();
    await approvalsCommand({ store: l.store, redis: l.redis, out, args: { count: 100, json: false } });
    expect(out.lines[0]).toMatch(/^TENANT\s+RUN\s+TOOL\s+EXPIRES\s+REASON\s+SHOWN\s+RECEIPT$/);
    expect(out.text).toContain('refund of 250');
    expect(out.text).toContain('{"amount":300}');
    expect(out.text).toMatch(/in 2\dh|in 1d/);
    expect(out.text).not.toContain('4111111111111111');
    expect(out.text).toContain(`approve '${first!.receiptKey}'`);

    const acme = new Capture();
    await approvalsCommand({ store: l.store, redis: l.redis, out: acme, args: { tenantId: 'acme', count: 100, json: true } });
    const listed = JSON.parse(acme.text) as PendingApproval[];
    expect(listed.map((p) => [p.tenantId, p.reason])).toEqual([['acme', 'refund of 250']]);

    const none = new Capture();
    await approvalsCommand({ store: l.store, redis: l.redis, out: none, args: { tenantId: 'initech', count: 100, json: false } });
    expect(none.text).toMatch(/^No calls of tenant initech await approval/);
  });
});

describe('tool-receipts approve and deny', () => {
  it('approve reads the fence, prints it, promotes the job, which runs the call once; recorded as from the cli', async () => {
    const l = await lane();
    const { tool, runs } = refundTool();
    l.worker({ tools: [tool] });
    const job = await l.add(jobData([call('refund', { amount: 250, card: '4111111111111111' })]));
    const [pending] = await pendingOf(l);

    const out = new Capture();
    await decideCommand({
      store: l.store,
      redis: l.redis,
      out,
      args: decideArgs(pending!.receiptKey, ['--note', 'checked', '--actor', 'ana']),
    });
    expect(out.lines[0]).toBe(`Read: epoch ${pending!.epoch}, arguments digest ${pending!.argsHash}.`);
    expect(out.lines[1]).toMatch(new RegExp(`^Approved .* as ana at .*, with your note\\.$`));
    // Promoted: it runs now, not when the 24 h approval would expire.
    const done = await l.settle(job);
    expect((done.returnvalue as ToolJobResult).results.map((r) => r.outcome)).toEqual(['executed']);
    expect(runs).toEqual([250]);
    const audit = await new AuditLog(l.redis, l.prefix).read();
    expect(audit.map((a) => [a.action, a.actor, a.source])).toEqual([['approve', 'ana', 'cli']]);
  });

  it('approve from the real CLI on node-redis (TOOL_RECEIPTS_CLIENT=node-redis) promotes the job too: it runs now, not at the expiry', async () => {
    const l = await lane();
    const { tool, runs } = refundTool();
    l.worker({ tools: [tool] });
    const job = await l.add(jobData([call('refund', { amount: 250, card: '4111111111111111' })]));
    const [pending] = await pendingOf(l);
    const ran = await spawnCli(['approve', pending!.receiptKey, '--actor', 'ana', '--prefix', l.prefix], l.url, {
      TOOL_RECEIPTS_CLIENT: 'node-redis',
    });
    expect(ran.stderr).toBe('');
    expect(ran.code).toBe(0);
    const done = await l.settle(job, 10_000);
    expect((done.returnvalue as ToolJobResult).results.map((r) => r.outcome)).toEqual(['executed']);
    expect(runs).toEqual([250]);
  });

  it('deny from the real CLI; a second decision is refused naming who denied it, exit 1, one sentence, nothing written', async () => {
    const l = await lane();
    const { tool, runs } = refundTool({ redact: false });
    l.worker({ tools: [tool] });
    const job = await l.add(jobData([call('refund', { amount: 900, card: '4000000000000002' }, 'toolu_r')]));
    const [pending] = await pendingOf(l);
    expect(pending!.job).toMatchObject({ queue: l.queueName, prefix: l.prefix, id: job.id });

    const denied = await cli(l, ['deny', pending!.receiptKey, '--note', 'not this card', '--actor', 'bo']);
    expect(denied.stderr).toBe('');
    expect(denied.code).toBe(0);
    expect(denied.stdout).toContain(`Denied ${pending!.receiptKey} as bo`);
    const done = await l.settle(job);
    expect((done.returnvalue as ToolJobResult).results[0]!.content).toContain('denied by "bo"');
    expect(runs).toEqual([]);

    const before = await l.redis.hgetall(pending!.receiptKey);
    const again = await cli(l, ['approve', pending!.receiptKey]);
    expect(again.code).toBe(1);
    expect(again.stdout).toBe('');
    expect(again.stderr).toBe(
      `tool-receipts: ${pending!.receiptKey} is not awaiting approval: bo already denied it; nothing was written\n`,
    );
    expect(hasStackTrace(again.stderr)).toBe(false);
    expect(await l.redis.hgetall(pending!.receiptKey)).toEqual(before);
  });

  it("deny keeps the denied receipt as long as the workers' retention it is given (--retention-ms), not the default", async () => {
    const l = await lane();
    const { tool } = refundTool();
    l.worker({ tools: [tool] });
    await l.add(jobData([call('refund', { amount: 400, card: '4000000000000002' })]));
    const [pending] = await pendingOf(l);
    const week = 7 * 86_400_000;
    const denied = await cli(l, ['deny', pending!.receiptKey, '--retention-ms', String(week)]);
    expect(denied.code).toBe(0);
    expect(await l.redis.hget(pending!.receiptKey, 'status')).toBe('denied');
    expect(await l.redis.pttl(pending!.receiptKey)).toBeGreaterThan(week - 60_000);
  });

  it('a given fence that is not the call’s, or a key that is no receipt key, is refused with its code, nothing written', async () => {
    const l = await lane();
    const { tool, runs } = refundTool();
    l.worker({ tools: [tool] });
    await l.add(jobData([call('refund', { amount: 700, card: '4000000000000002' })]));
    const [pending] = await pendingOf(l);
    const before = await l.redis.hgetall(pending!.receiptKey);

    const wrongDigest = await cli(l, ['approve', pending!.receiptKey, '--epoch', pending!.epoch, '--args-hash', 'f'.repeat(64), '--json']);
    expect(wrongDigest.code).toBe(1);
    expect(JSON.parse(wrongDigest.stderr)).toMatchObject({ error: { code: 'approval.args_mismatch' } });
    const wrongEpoch = await cli(l, ['deny', pending!.receiptKey, '--epoch', 'another', '--args-hash', pending!.argsHash]);
    expect(wrongEpoch.code).toBe(1);
    expect(wrongEpoch.stderr).toMatch(/another lifetime .* nothing was written/);
    const badFlag = await cli(l, ['approve', pending!.receiptKey, '--epoch', 'not an epoch!']);
    expect(badFlag.code).toBe(2);
    // A key that is no receipt key under the prefix is a bad command line too, as for show and resolve.
    for (const key of ['garbage', pending!.receiptKey.replace(l.prefix, `${l.prefix}x`)]) {
      const badKey = await cli(l, ['deny', key, '--json']);
      expect(badKey.code).toBe(2);
      expect(JSON.parse(badKey.stderr)).toMatchObject({ error: { code: 'cli.invalid_receipt_key' } });
    }
    expect(await l.redis.hgetall(pending!.receiptKey)).toEqual(before);
    expect(await new AuditLog(l.redis, l.prefix).read()).toEqual([]);
    expect(runs).toEqual([]);
  });
});
