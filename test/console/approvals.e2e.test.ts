/**
 * The console's "Needs approval" page in headless Chromium, on a real Redis
 * with a real BullMQ worker whose refund tool needs approval: an approver
 * approves one call (its job runs it once) and denies another (never run),
 * a read-only token sees but cannot decide, an approver cannot resolve, a
 * cross-origin POST is refused, and arguments holding HTML and script are
 * shown as text.
 */
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineTool, type ToolJobResult } from '../../src/bullmq/index.js';
import { approveCall, listPendingApprovals, type PendingApproval } from '../../src/approvals/index.js';
import { startConsoleServer, type ConsoleServer } from '../../src/console/index.js';
import { AuditLog } from '../../src/redis/operators/audit-log.js';
import { call, jobData, useLanes, type Lane } from '../bullmq/fixture.js';
import { launchChromium, openPage, screenshots, type PageTrouble } from './support.js';

const OPERATOR = 'operator-token-0123456789abcdef';
const APPROVER = 'approver-token-0123456789abcdef';
const READER = 'reader-token-0123456789abcdef';
const SCRIPT_MEMO = '</pre><script>alert(document.cookie)</script><img src=x onerror=alert(1)>';

const lane = useLanes({ queues: 'redis' });
let browser: Browser;

beforeAll(async () => {
  browser = await launchChromium();
}, 60_000);
afterAll(async () => {
  await browser?.close();
});

function refundTool() {
  const runs: string[] = [];
  const tool = defineTool({
    name: 'refund',
    input: z.object({ amount: z.number(), memo: z.string() }),
    effect: 'opaque',
    approval: (args) => ({ reason: `refund of ${args.amount}: ${args.memo}` }),
    execute(args) {
      runs.push(args.memo);
      return `refunded ${args.amount}`;
    },
  });
  return { tool, runs };
}

/** A lane with a worker, two parked refunds and a console with three tokens. */
async function setUp(): Promise<{ l: Lane; runs: string[]; server: ConsoleServer; pending: Record<string, PendingApproval> }> {
  const l = await lane();
  const { tool, runs } = refundTool();
  l.worker({ tools: [tool] });
  await l.add(jobData([call('refund', { amount: 120, memo: SCRIPT_MEMO })], { tenantId: 'acme', runId: 'run-approve' }));
  await l.add(jobData([call('refund', { amount: 990, memo: 'to a new card' })], { tenantId: 'acme', runId: 'run-deny' }));
  const until = Date.now() + 20_000;
  let listed: PendingApproval[] = [];
  while (listed.length < 2) {
    if (Date.now() > until) throw new Error('the refunds did not become pending');
    await new Promise((r) => setTimeout(r, 50));
    listed = await listPendingApprovals({ redis: l.redis, prefix: l.prefix });
  }
  const server = await startConsoleServer({
    redis: l.redis,
    prefix: l.prefix,
    port: 0,
    tokens: { operator: OPERATOR, approver: APPROVER, read: READER },
    onError: () => undefined,
  });
  const pending = Object.fromEntries(listed.map((p) => [p.runId, p]));
  return { l, runs, server, pending };
}

async function signIn(page: Page, url: string, token: string): Promise<void> {
  await page.goto(url);
  await page.fill('input[name=token]', token);
  await Promise.all([page.waitForResponse((r) => r.url().endsWith('/login')), page.click('button[type=submit]')]);
  await page.waitForSelector('h1:text-is("Needs a person")');
  await Promise.all([page.waitForURL(/\/approvals/), page.click('nav >> text=Needs approval')]);
}

const noTrouble = (t: PageTrouble) =>
  expect({
    ...t,
    consoleErrors: t.consoleErrors.filter(
      (m) => !/^Failed to load resource: the server responded with a status of (401|403|409)\b/.test(m),
    ),
  }).toEqual({ dialogs: [], consoleErrors: [], pageErrors: [] });

async function settled(l: Lane, jobId: string) {
  const job = await l.queue.getJob(jobId);
  return (await l.settle(job!)).returnvalue as ToolJobResult;
}

describe('Needs approval in a browser', () => {
  it('an approver approves one call (run once) and denies another (never run); script in the arguments is shown as text', async () => {
    const { l, runs, server, pending } = await setUp();
    try {
      const { context, page, trouble } = await openPage(browser);
      await signIn(page, server.url, APPROVER);
      await expect(page.locator('header .who').textContent()).resolves.toContain('approver');
      const card = page.locator('section.approval', { hasText: 'run-approve' });
      // Without a redact hook the arguments come from the job, as text: no element of the payload exists.
      await expect(card.locator('pre.arguments').textContent()).resolves.toContain(SCRIPT_MEMO);
      await expect(card.textContent()).resolves.toContain(`refund of 120: ${SCRIPT_MEMO}`);
      expect(await page.locator('main script, main img').count()).toBe(0);
      await screenshots(page, 'needs-approval');

      await card.locator('input[name=note]').fill('checked with the customer');
      await Promise.all([page.waitForURL(/decided=approved/), card.locator('button[value=approve]').click()]);
      await expect(page.locator('.banner.ok').textContent()).resolves.toContain('Approved');
      expect((await settled(l, pending['run-approve']!.jobId!)).results.map((r) => r.outcome)).toEqual(['executed']);
      expect(runs).toEqual([SCRIPT_MEMO]);

      const other = page.locator('section.approval', { hasText: 'run-deny' });
      await other.locator('input[name=note]').fill('not to a new card');
      await Promise.all([page.waitForURL(/decided=denied/), other.locator('button[value=deny]').click()]);
      const denied = await settled(l, pending['run-deny']!.jobId!);
      expect(denied.results[0]).toMatchObject({ outcome: 'denied' });
      expect(denied.results[0]!.content).toContain('"not to a new card"');
      expect(runs).toEqual([SCRIPT_MEMO]);
      await expect(page.locator('main').textContent()).resolves.toContain('Nothing to decide.');

      const audit = await new AuditLog(l.redis, l.prefix).read();
      expect(audit.map((a) => [a.action, a.source, a.actor.startsWith('approver token')])).toEqual([
        ['deny', 'console', true],
        ['approve', 'console', true],
      ]);
      noTrouble(trouble);
      await context.close();
    } finally {
      await server.close();
    }
  });

  it('a form opened before another approver decided and the worker claimed the call: refused as not pending, naming the winner', async () => {
    const { l, runs, server, pending } = await setUp();
    try {
      const { context, page, trouble } = await openPage(browser);
      await signIn(page, server.url, APPROVER);
      const card = page.locator('section.approval', { hasText: 'run-approve' });
      await card.waitFor();
      // Meanwhile somebody else approves in code, and the worker claims and runs the call (its epoch moves on).
      await approveCall({ redis: l.redis, prefix: l.prefix, ...pending['run-approve']!, actor: 'carol' });
      expect((await settled(l, pending['run-approve']!.jobId!)).results.map((r) => r.outcome)).toEqual(['executed']);
      await Promise.all([page.waitForResponse((r) => r.status() === 409), card.locator('button[value=approve]').click()]);
      const banner = await page.locator('.banner').first().textContent();
      expect(banner).toContain('carol already approved it');
      expect(banner).not.toContain('another lifetime');
      expect(runs).toEqual([SCRIPT_MEMO]);
      noTrouble(trouble);
      await context.close();
    } finally {
      await server.close();
    }
  });

  it('read-only sees and cannot decide; an approver cannot resolve; a cross-origin POST is refused; nothing is written', async () => {
    const { l, runs, server, pending } = await setUp();
    try {
      const target = pending['run-approve']!;
      const before = await l.redis.hgetall(target.receiptKey);
      const form = (csrf: string) => ({ csrf, key: target.receiptKey, epoch: target.epoch, args: target.argsHash, decision: 'approve' });
      const origin = server.url.replace(/\/$/, '');

      const reader = await openPage(browser);
      await signIn(reader.page, server.url, READER);
      await expect(reader.page.locator('main').textContent()).resolves.toContain('2 calls await approval');
      expect(await reader.page.locator('form.decide').count()).toBe(0);
      await expect(reader.page.locator('main').textContent()).resolves.toContain('an approver or operator token is needed');
      const readerCsrf = (await reader.context.cookies()).find((c) => c.name === 'trc_console_csrf')!.value;
      const byReader = await reader.page.request.post(`${server.url}approvals/decide`, {
        form: form(readerCsrf),
        headers: { Origin: origin },
        maxRedirects: 0,
      });
      expect(byReader.status()).toBe(403);
      expect(await byReader.text()).toContain('read-only');
      noTrouble(reader.trouble);
      await reader.context.close();

      const approver = await openPage(browser);
      await signIn(approver.page, server.url, APPROVER);
      const csrf = (await approver.context.cookies()).find((c) => c.name === 'trc_console_csrf')!.value;
      const resolve = await approver.page.request.post(`${server.url}receipt/resolve`, {
        form: { csrf, key: target.receiptKey, attempts: '1', outcome: 'failed', error: 'x' },
        headers: { Origin: origin },
        maxRedirects: 0,
      });
      expect(resolve.status()).toBe(403);
      expect(await resolve.text()).toContain('an approver token: it approves and denies calls only');
      const foreign = await approver.page.request.post(`${server.url}approvals/decide`, {
        form: form(csrf),
        headers: { Origin: 'https://evil.example' },
        maxRedirects: 0,
      });
      expect(foreign.status()).toBe(403);
      expect(await foreign.text()).toContain('another origin');
      // A stale fence from the page (another lifetime): 409 with the typed sentence, nothing written.
      const stale = await approver.page.request.post(`${server.url}approvals/decide`, {
        form: { ...form(csrf), epoch: 'another-lifetime' },
        headers: { Origin: origin },
        maxRedirects: 0,
      });
      expect(stale.status()).toBe(409);
      expect(await stale.text()).toContain('another lifetime');
      await approver.context.close();

      expect(await l.redis.hgetall(target.receiptKey)).toEqual(before);
      expect(await new AuditLog(l.redis, l.prefix).read()).toEqual([]);
      expect(runs).toEqual([]);
    } finally {
      await server.close();
    }
  });
});
