/**
 * What operators see of calls in an approval state, on a real Redis: `show`,
 * `run` and the console's receipt, run and counts pages read a call awaiting
 * approval, approved or denied (no longer refused as corrupt), `resolve`
 * refuses it naming the state, `ambiguous` passes over it, and `stats`
 * counts the calls awaiting approval from the pending index.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { ApprovalGate } from '../../src/approvals/gate.js';
import { approveCall, denyCall, pendingApprovalsRedisKey } from '../../src/approvals/index.js';
import { runCommand } from '../../src/cli/commands/run.js';
import { showCommand } from '../../src/cli/commands/show.js';
import { statsCommand, type StatsReport } from '../../src/cli/commands/stats.js';
import { startConsoleServer, type ConsoleServer } from '../../src/console/index.js';
import type { ToolCallReceiptKey } from '../../src/core/identity.js';
import { ResolveRefusedError } from '../../src/operator/errors.js';
import { resolveReceipt } from '../../src/operator/resolve.js';
import { ReceiptsKeyspace } from '../../src/redis/receipts/keyspace.js';
import type { ReceiptStore } from '../../src/redis/receipts/store.js';
import { Capture } from '../cli/support.js';
import { cookieOf, csrfFieldOf, send } from '../console/support-http.js';
import { AuditLog } from '../../src/redis/operators/audit-log.js';
import { freshKey, useRedis, waitUntil } from '../support/redis-fixture.js';

const fixture = useRedis();
const servers: ConsoleServer[] = [];
afterAll(async () => {
  await Promise.all(servers.map((s) => s.close()));
});

/** Puts `key` awaiting approval through the worker's own gate (receipt and index), as a call of a tool with a rule does. */
async function awaitApproval(store: ReceiptStore, key: ToolCallReceiptKey, timeoutMs = 3_600_000): Promise<void> {
  const gate = new ApprovalGate(ReceiptsKeyspace.open({ redis: fixture.connect(), prefix: store.prefix, retentionMs: 60_000 }).channel);
  const answer = await gate.pass(
    {
      key,
      needed: { reason: 'refund of 250 is <b>above</b> 100' },
      effect: 'opaque',
      timeoutMs,
      shown: JSON.stringify({ amount: 250, card: '<script>alert(1)</script>' }),
      job: undefined,
    },
    (error) => {
      throw error;
    },
  );
  expect(answer.kind).toBe('await');
}

/** Three calls of one run: one awaiting approval, one approved (not started), one denied with a note. */
async function threeStates(store: ReceiptStore) {
  const redis = fixture.connect();
  const base = freshKey({ toolName: 'refund' });
  const [awaiting, approved, denied] = ['a', 'b', 'c'].map((h) => ({ ...base, argsHash: `${base.argsHash}${h}` })) as [
    ToolCallReceiptKey,
    ToolCallReceiptKey,
    ToolCallReceiptKey,
  ];
  for (const key of [awaiting, approved, denied]) await awaitApproval(store, key);
  const fence = async (key: ToolCallReceiptKey) => {
    const receiptKey = store.redisKey(key);
    const epoch = (await redis.hget(receiptKey, 'epoch')) ?? '';
    return { redis, prefix: store.prefix, receiptKey, epoch, argsHash: key.argsHash };
  };
  await approveCall({ ...(await fence(approved)), actor: 'ana@example.com', note: 'checked' });
  await denyCall({ ...(await fence(denied)), actor: 'bo@example.com', note: 'needs a <ticket>' });
  return { base, awaiting, approved, denied };
}

describe('a call in an approval state, as operators see it', () => {
  it('show prints its status and approval (reason, shown, expiry, epoch, digest, who decided), and --json carries them', async () => {
    const store = fixture.store();
    const { awaiting, approved, denied } = await threeStates(store);
    const redis = fixture.connect();

    const waiting = new Capture();
    await showCommand({ store, out: waiting, args: { redisKey: store.redisKey(awaiting), json: false } });
    const epoch = (await redis.hget(store.redisKey(awaiting), 'epoch'))!;
    expect(waiting.text).toMatch(/^state +awaiting approval$/m);
    expect(waiting.text).toMatch(/^status +awaiting_approval$/m);
    expect(waiting.text).toContain('refund of 250 is <b>above</b> 100');
    expect(waiting.text).toContain('"card":"<script>alert(1)</script>"');
    expect(waiting.text).toMatch(new RegExp(`^approval epoch +${epoch}$`, 'm'));
    expect(waiting.text).toMatch(new RegExp(`^approval digest +${awaiting.argsHash}$`, 'm'));
    expect(waiting.text).toMatch(/^approval expires +\d{4}-.*\(in /m);
    expect(waiting.text).toMatch(/^approval decision +pending$/m);
    expect(waiting.text).toContain('Awaiting approval: the call has not run. Decide with tool-receipts');

    const yes = new Capture();
    await showCommand({ store, out: yes, args: { redisKey: store.redisKey(approved), json: false } });
    expect(yes.text).toMatch(/^state +approved \(not started\)$/m);
    expect(yes.text).toMatch(/^approval decision +approved by ana@example\.com from code$/m);
    expect(yes.text).toMatch(/^approval note +checked$/m);

    const no = new Capture();
    await showCommand({ store, out: no, args: { redisKey: store.redisKey(denied), json: true } });
    const shown = JSON.parse(no.text) as { status: string; attempts: number; approval: Record<string, unknown> };
    expect(shown.status).toBe('denied');
    expect(shown.attempts).toBe(0);
    expect(shown.approval).toMatchObject({
      decision: 'denied',
      by: 'bo@example.com',
      note: 'needs a <ticket>',
      source: 'code',
      argsHash: denied.argsHash,
      reason: 'refund of 250 is <b>above</b> 100',
      shown: { amount: 250, card: '<script>alert(1)</script>' },
    });
    expect(typeof shown.approval['decidedMs']).toBe('number');
    expect(shown.approval['epoch']).toBe(await redis.hget(store.redisKey(denied), 'epoch'));
  });

  it('show names the job parked for a call awaiting approval: where its arguments are', async () => {
    const store = fixture.store();
    const key = freshKey({ toolName: 'refund' });
    const gate = new ApprovalGate(ReceiptsKeyspace.open({ redis: fixture.connect(), prefix: store.prefix }).channel);
    const job = { queue: 'tools', prefix: 'bull', id: '42' };
    expect((await gate.pass({ key, needed: {}, effect: 'opaque', timeoutMs: 60_000, shown: '', job }, () => undefined)).kind).toBe('await');
    const out = new Capture();
    await showCommand({ store, out, args: { redisKey: store.redisKey(key), json: false } });
    expect(out.text).toContain('in the data of job 42 of queue tools (the job parked for approval; redis-cli HGET bull:tools:42 data)');
    expect(out.text).toMatch(/^jobs +parked for approval: bull:tools job 42$/m);
    const json = new Capture();
    await showCommand({ store, out: json, args: { redisKey: store.redisKey(key), json: true } });
    expect((JSON.parse(json.text) as { approval: { job: unknown } }).approval.job).toEqual(job);
  });

  it('run lists the three, and the journal leaves them out: none of them has run', async () => {
    const store = fixture.store();
    const { base } = await threeStates(store);
    const out = new Capture();
    await runCommand({ store, out, args: { tenantId: base.tenantId, runId: base.runId, json: false } });
    expect(out.text).toContain('3 receipts for');
    for (const label of ['awaiting approval', 'approved (not started)', 'denied']) expect(out.text).toContain(label);
    expect(out.text).toContain('Resume journal note: none');
  });

  it('resolve refuses each naming its state, with nothing written; ambiguous passes over them, not as corrupt', async () => {
    const store = fixture.store();
    const keys = await threeStates(store);
    const redis = fixture.connect();
    for (const key of [keys.awaiting, keys.approved, keys.denied]) {
      const redisKey = store.redisKey(key);
      const before = await redis.hgetall(redisKey);
      const refusal = await resolveReceipt(store, redisKey, { outcome: 'failed', error: 'no', attemptsSeen: 1 }).catch((e: unknown) => e);
      expect(refusal).toBeInstanceOf(ResolveRefusedError);
      expect((refusal as ResolveRefusedError).reason).toBe('approval_state');
      expect((refusal as Error).message).toContain(`is ${before['status']}: the call has not run`);
      expect(await redis.hgetall(redisKey)).toEqual(before);
    }
    const corrupt: unknown[] = [];
    const scan = await store.scanAmbiguous({ onCorrupt: (e) => corrupt.push(e) });
    expect(corrupt).toEqual([]);
    expect(scan.receipts.filter((r) => r.key.runId === keys.base.runId)).toEqual([]);
  });

  it("the console's receipt and run pages show each state, its approval as text", async () => {
    const store = fixture.store();
    const { base, awaiting, approved, denied } = await threeStates(store);
    const server = await startConsoleServer({ redis: fixture.connect(), prefix: store.prefix, port: 0 });
    servers.push(server);
    const page = async (path: string) => {
      const res = await fetch(new URL(path, server.url));
      return { status: res.status, body: await res.text() };
    };
    for (const [key, badge, decision] of [
      [awaiting, 'awaiting approval', 'pending'],
      [approved, 'approved (not started)', 'approved by ana@example.com from code'],
      [denied, 'denied', 'denied by bo@example.com from code'],
    ] as const) {
      const { status, body } = await page(`receipt?key=${encodeURIComponent(store.redisKey(key))}`);
      expect(status).toBe(200);
      expect(body).toContain(`>${badge}</span>`);
      expect(body).toContain('<h2>Approval</h2>');
      expect(body).toContain(`<th>approval decision</th><td>${decision}</td>`);
      expect(body).toContain(`<th>approval digest</th><td>${key.argsHash}</td>`);
      expect(body).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
      expect(body).not.toContain('<script>alert(1)');
      expect(body).not.toContain('<b>above</b>');
    }
    const { body: denial } = await page(`receipt?key=${encodeURIComponent(store.redisKey(denied))}`);
    expect(denial).toContain('needs a &lt;ticket&gt;');
    const run = await page(`run?tenant=${encodeURIComponent(base.tenantId)}&run=${encodeURIComponent(base.runId)}`);
    expect(run.status).toBe(200);
    for (const state of ['awaiting_approval', 'approved', 'denied']) expect(run.body).toContain(`class="bar ${state}"`);
  });
});

/** A store under a prefix of its own: the pending index is per prefix, and the tests above leave calls in it. */
const ownPrefix = (name: string) => fixture.store({ prefix: `${fixture.store().prefix}-${name}` });

describe('stats leaves calls in an approval state out of the counts by status', () => {
  it('read from the counting sets or by SCAN alike: none of them has run', async () => {
    const store = ownPrefix('by-status');
    await threeStates(store);
    const ran = freshKey({ toolName: 'refund' });
    const claimed = await store.claim(ran, { effect: 'opaque' });
    await store.complete(ran, claimed.fence!, 'done');
    for (const scan of [false, true]) {
      const stats = await store.stats({ scan });
      expect(stats.byStatus, `scan: ${scan}`).toEqual({ running: 0, completed: 1, failed: 0 });
    }
  });
});

describe('stats and the counts page count the calls awaiting approval', () => {
  it('overall and per tenant, leaving out decided and expired ones (and dropping them from the index)', async () => {
    const store = ownPrefix('counted');
    const redis = fixture.connect();
    const acme = freshKey({ tenantId: 'acme', toolName: 'refund' });
    const globex = freshKey({ tenantId: 'globex', toolName: 'refund' });
    await awaitApproval(store, { ...acme, argsHash: 'h1' });
    await awaitApproval(store, { ...acme, argsHash: 'h2' });
    await awaitApproval(store, { ...globex, argsHash: 'h1' });
    // Decided: out of the count. Expired (60 ms): out of the count and of the index.
    const decided = { ...acme, argsHash: 'h3' };
    await awaitApproval(store, decided);
    const receiptKey = store.redisKey(decided);
    await denyCall({
      redis,
      prefix: store.prefix,
      receiptKey,
      epoch: (await redis.hget(receiptKey, 'epoch'))!,
      argsHash: 'h3',
      actor: 'ana',
    });
    const expired = { ...globex, argsHash: 'h2' };
    await awaitApproval(store, expired, 60);
    const index = pendingApprovalsRedisKey(store.prefix);
    await waitUntil(
      async () => Number((await redis.time())[0]) * 1000 - Number(await redis.zscore(index, store.redisKey(expired))),
      (late) => late > 100,
    );

    const all = new Capture();
    await statsCommand({ store, redis, out: all, args: { json: true } });
    const report = JSON.parse(all.text) as StatsReport;
    expect(report.awaitingApproval).toMatchObject({ count: 3, complete: true });
    expect(report.awaitingApproval.soonestExpiresAtMs).toBeGreaterThan(report.readAtMs);
    expect(await redis.zscore(index, store.redisKey(expired))).toBeNull();

    const tenant = new Capture();
    await statsCommand({ store, redis, out: tenant, args: { json: true, tenantId: 'acme' } });
    expect((JSON.parse(tenant.text) as StatsReport).awaitingApproval.count).toBe(2);

    const text = new Capture();
    await statsCommand({ store, redis, out: text, args: { json: false, tenantId: 'globex' } });
    expect(text.text).toMatch(/^Awaiting approval: 1, the soonest expires in .+\. List them with: tool-receipts approvals$/m);

    const server = await startConsoleServer({ redis: fixture.connect(), prefix: store.prefix, port: 0 });
    servers.push(server);
    const counts = await (await fetch(new URL('counts', server.url))).text();
    expect(counts).toMatch(/<p id="awaiting-approval">Awaiting approval: <a href="\/approvals">3<\/a>, the soonest expires <time/);
  });

  it('says nothing of approvals when none awaits', async () => {
    const store = ownPrefix('none');
    const out = new Capture();
    await statsCommand({ store, redis: fixture.connect(), out, args: { json: true } });
    expect((JSON.parse(out.text) as StatsReport).awaitingApproval).toEqual({ count: 0, soonestExpiresAtMs: null, complete: true });
  });

  it('a console with an approver token alone names that role in the audit, and keeps the denial as long as retentionMs says', async () => {
    const store = ownPrefix('approver-only');
    const key = { ...freshKey(), tenantId: 'initech' };
    await awaitApproval(store, key);
    const receiptKey = store.redisKey(key);
    const redis = fixture.connect();
    const epoch = (await redis.hget(receiptKey, 'epoch'))!;
    const approver = 'approver-only-token-0123456789';
    const week = 7 * 86_400_000;
    const server = await startConsoleServer({ redis, prefix: store.prefix, port: 0, tokens: { approver }, retentionMs: week });
    servers.push(server);
    const port = Number(new URL(server.url).port);
    const auth = { authorization: `Bearer ${approver}` };
    const page = await send(port, '/approvals', { headers: auth });
    expect(page.status).toBe(200);
    const body = new URLSearchParams({ key: receiptKey, epoch, args: key.argsHash, decision: 'deny', csrf: csrfFieldOf(page.body)! });
    const decided = await send(port, '/approvals/decide', {
      method: 'POST',
      headers: { ...auth, cookie: cookieOf(page) },
      body: body.toString(),
    });
    expect(decided.status).toBe(303);
    expect(await redis.hget(receiptKey, 'status')).toBe('denied');
    expect(await redis.pttl(receiptKey)).toBeGreaterThan(week - 3_600_000);
    const [entry] = await new AuditLog(redis, store.prefix).read();
    expect(entry).toMatchObject({ action: 'deny', source: 'console' });
    expect(entry!.actor).toMatch(/^approver token from /);
    expect(await redis.hget(receiptKey, 'approval_by')).toMatch(/^approver token from /);
  });
});
