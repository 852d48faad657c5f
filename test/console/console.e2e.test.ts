/**
 * The console end to end: a real Redis, receipts left ambiguous by real
 * worker processes SIGKILLed mid-effect, the console served over HTTP, and
 * headless Chromium clicking through it.
 */
import { Job, Queue } from 'bullmq';
import { Redis } from 'ioredis';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { idempotencyKeyFor } from '../../src/core/identity.js';
import type { ToolJobResult } from '../../src/bullmq/index.js';
import { startConsoleServer, ConsoleTokenRequiredError, type ConsoleServer } from '../../src/console/index.js';
import { AuditLog } from '../../src/redis/operators/audit-log.js';
import { ReceiptStore } from '../../src/redis/receipts/store.js';
import { startRedis, type RedisHandle } from '../support/redis.js';
import { spawnWorkerProcess, type WorkerProcess } from '../support/worker-process.js';
import { CRASH_WORKER_TIMING } from '../bullmq/fixture.js';
import { emailJob, killMidEffect, launchChromium, openPage, screenshots, waitForJobs, type PageTrouble } from './support.js';

const OPERATOR = 'operator-token-0123456789abcdef';
const READER = 'reader-token-0123456789abcdef';
const XSS_TENANT = '<img src=x onerror=alert(1)>';
const SCRIPT_RESULT = '</script><script>alert("result")</script>';

let handle: RedisHandle;
let redis: Redis;
let queue: Queue;
let store: ReceiptStore;
let prefix: string;
let server: ConsoleServer;
let takeover: WorkerProcess;
let browser: Browser;
const jobs: Record<string, Job> = {};
const keys: Record<string, string> = {};

const keyOf = async (tenantId: string, runId: string) => {
  const records = await store.listRun(tenantId, runId);
  expect(records).toHaveLength(1);
  return records[0]!.redisKey;
};

beforeAll(async () => {
  handle = await startRedis();
  prefix = handle.prefix;
  redis = new Redis(handle.url, { maxRetriesPerRequest: null });
  queue = new Queue('tools', { connection: new Redis(handle.url, { maxRetriesPerRequest: null }), prefix });
  store = new ReceiptStore({ redis, prefix });
  const made = await killMidEffect({ url: handle.url, prefix, queue }, [
    emailJob('acme', 'run-resolve', 'toolu_resolve'),
    emailJob('acme', 'run-stale', 'toolu_stale'),
    emailJob('acme', 'run-find', 'toolu_find'),
    emailJob('bulk-co', 'run-b1', 'toolu_b1'),
    emailJob('bulk-co', 'run-b2', 'toolu_b2'),
    emailJob('bulk-co', 'run-b3', 'toolu_b3'),
    emailJob(XSS_TENANT, 'run-xss', 'toolu_xss'),
    // A run whose ticket was created before the email froze: one settled receipt, one ambiguous.
    {
      ...emailJob('acme', 'run-timeline', 'toolu_tl_email'),
      calls: [
        { id: 'toolu_tl_ticket', name: 'create_ticket', input: { title: 'Printer on fire' } },
        emailJob('acme', 'run-timeline', 'toolu_tl_email').calls[0]!,
      ],
    },
  ]);
  ['resolve', 'stale', 'find', 'b1', 'b2', 'b3', 'xss'].forEach((name, i) => (jobs[name] = made[i]!));
  for (const [name, tenant] of [
    ['resolve', 'acme'],
    ['stale', 'acme'],
    ['find', 'acme'],
    ['b1', 'bulk-co'],
    ['b2', 'bulk-co'],
    ['b3', 'bulk-co'],
    ['xss', XSS_TENANT],
  ] as const) {
    keys[name] = await keyOf(tenant, `run-${name}`);
  }
  // A worker that stays: it picks up the dead worker's stalled jobs, meets each call ambiguous and fails the job.
  takeover = await spawnWorkerProcess('crash-worker', {
    REDIS_URL: handle.url,
    PREFIX: prefix,
    QUEUE: 'tools',
    CRASH_AT: 'none',
    ...CRASH_WORKER_TIMING,
  });
  await waitForJobs(queue, made, 'failed');
  server = await startConsoleServer({
    redis,
    prefix,
    port: 0,
    tokens: { operator: OPERATOR, read: READER },
    queues: [{ name: 'tools', prefix }],
    onError: () => undefined,
  });
  browser = await launchChromium();
}, 180_000);

afterAll(async () => {
  await browser?.close();
  await server?.close();
  await takeover?.signal('SIGKILL');
  await queue?.close();
  redis?.disconnect();
  await handle?.stop();
});

async function signIn(page: Page, token: string): Promise<void> {
  const first = await page.goto(server.url);
  expect(first?.status()).toBe(401);
  await page.fill('input[name=token]', token);
  await Promise.all([page.waitForResponse((r) => r.url().endsWith('/login')), page.click('button[type=submit]')]);
  await page.waitForSelector('h1:text-is("Needs a person")');
}

/** No dialog, no uncaught error, no console error (a refusal's own status code, which the browser logs as a failed load, aside). */
const noTrouble = (t: PageTrouble) =>
  expect({
    ...t,
    consoleErrors: t.consoleErrors.filter(
      (m) => !/^Failed to load resource: the server responded with a status of (401|403|409)\b/.test(m),
    ),
  }).toEqual({
    dialogs: [],
    consoleErrors: [],
    pageErrors: [],
  });

describe('console in a browser', () => {
  it("lists the killed workers' calls, opens one, resolves it; the job replays it and the audit log shows the action", async () => {
    const { context, page, trouble } = await openPage(browser);
    await signIn(page, OPERATOR);
    const row = page.locator('tbody tr', { hasText: 'run-resolve' });
    await expect(row.locator('td').nth(2).textContent()).resolves.toBe('send_email');
    await expect(row.locator('td').nth(3).textContent()).resolves.toBe('1');
    // The lost attempt's job is the one the dead worker ran.
    await expect(row.locator('td').nth(6).textContent()).resolves.toBe(`tools #${jobs['resolve']!.id}`);
    await screenshots(page, 'needs-a-person');
    await Promise.all([page.waitForURL(/\/receipt\?/), row.locator('a', { hasText: 'open' }).click()]);
    await screenshots(page, 'receipt');
    await page.fill('#resolve-completed textarea[name=result]', '{"sent": true, "checkedBy": "on-call"}');
    await Promise.all([page.waitForURL(/notice=resolved/), page.click('#resolve-completed button')]);
    await expect(page.locator('.banner.ok').textContent()).resolves.toContain('Resolved as completed at attempt 1');
    await Promise.all([page.waitForLoadState(), page.click('text=Retry the BullMQ job')]);
    await expect(page.locator('.banner').textContent()).resolves.toContain('Retried 1 of');

    // The retried job replays the settled call instead of sending the email again.
    const done = await waitForJobs(queue, [jobs['resolve']!], 'completed').then(() => Job.fromId(queue, jobs['resolve']!.id!));
    const results = (done!.returnvalue as ToolJobResult).results;
    expect(results.map((r) => r.outcome)).toEqual(['replayed']);
    expect(results[0]!.content).toContain('on-call');

    await page.click('nav >> text=Audit log');
    const entries = page.locator('table.audit tbody tr');
    await expect(entries.nth(0).textContent()).resolves.toContain('retry-job');
    await expect(entries.nth(1).textContent()).resolves.toContain('resolve');
    await expect(entries.nth(1).textContent()).resolves.toContain(keys['resolve']!);
    await expect(entries.nth(1).textContent()).resolves.toContain('operator token');
    await screenshots(page, 'audit-log');
    const logged = await new AuditLog(redis, prefix).read();
    expect(logged.map((e) => e.action)).toEqual(['retry-job', 'resolve']);
    expect(logged[1]).toMatchObject({ source: 'console', receipts: [keys['resolve']], detail: { outcome: 'completed', attemptsSeen: 1 } });
    noTrouble(trouble);
    await context.close();
  });

  it('refuses a resolve from a page that went stale, and says what changed', async () => {
    const { context, page, trouble } = await openPage(browser);
    await signIn(page, OPERATOR);
    await page.goto(`${server.url}receipt?key=${encodeURIComponent(keys['stale']!)}`);
    await page.fill('#resolve-completed textarea[name=result]', '"sent"');
    // Someone else settles it after this page loaded.
    const before = (await store.inspect((await store.listRun('acme', 'run-stale'))[0]!.key))!;
    await store.resolve(before.key, {
      attemptsSeen: 1,
      epochSeen: before.epoch,
      outcome: 'failed',
      error: 'the provider has no such email',
    });
    const response = await Promise.all([
      page.waitForResponse((r) => r.request().method() === 'POST'),
      page.click('#resolve-completed button'),
    ]).then(([r]) => r);
    expect(response.status()).toBe(409);
    const banner = await page.locator('.banner.error').textContent();
    expect(banner).toContain('not resolved, nothing was written');
    // What changed: attempt 1 was settled as failed meanwhile.
    expect(banner).toMatch(/already failed/);
    expect(banner).toContain('The page you resolved from showed attempt 1');
    await screenshots(page, 'stale-resolve');
    // The other verdict stands.
    expect(await store.inspect(before.key)).toMatchObject({ status: 'failed', error: 'the provider has no such email' });
    noTrouble(trouble);
    await context.close();
  });

  it('bulk resolves by filter: preview count = resolved + skipped, and a receipt changed meanwhile is skipped', async () => {
    const { context, page, trouble } = await openPage(browser);
    await signIn(page, OPERATOR);
    await page.click('nav >> text=Bulk resolve');
    await page.fill('input[name=tenant]', 'bulk-co');
    await Promise.all([page.waitForURL(/preview=1/), page.click('form.filters button')]);
    await expect(page.locator('#bulk-count').textContent()).resolves.toBe('3');
    await expect(page.locator('#bulk-preview tbody tr').count()).resolves.toBe(3);
    await screenshots(page, 'bulk-preview');
    // One of them is settled by someone else after the preview.
    const changed = (await store.listRun('bulk-co', 'run-b2'))[0]!;
    await store.resolve(changed.key, { attemptsSeen: 1, epochSeen: changed.epoch, outcome: 'completed', result: 'sent' });

    await page.fill('input[name=name]', 'outage 12 May: emails never left');
    await page.fill('input[name=error]', 'the provider was down; nothing was sent');
    await page.check('input[name=confirm]');
    await Promise.all([page.waitForURL(/\/bulk\/job\?/), page.click('#bulk-confirm button')]);
    await page.waitForSelector('#bulk-status[data-finished=yes]', { timeout: 30_000 });
    const resolved = Number(await page.locator('#bulk-resolved').textContent());
    const skipped = Number(await page.locator('#bulk-skipped').textContent());
    expect({ resolved, skipped }).toEqual({ resolved: 2, skipped: 1 });
    expect(resolved + skipped).toBe(3);
    await expect(page.locator('#bulk-skipped-list').textContent()).resolves.toContain(keys['b2']!);
    await expect(page.locator('#bulk-skipped-list').textContent()).resolves.toMatch(/already completed/);
    await screenshots(page, 'bulk-done');
    for (const name of ['b1', 'b3']) {
      expect(await store.inspect((await store.listRun('bulk-co', `run-${name}`))[0]!.key)).toMatchObject({
        status: 'failed',
        error: 'the provider was down; nothing was sent',
      });
    }
    expect(await store.inspect(changed.key)).toMatchObject({ status: 'completed', result: 'sent' });

    await page.click('text=Back to bulk resolve');
    const history = await page.locator('table.audit').textContent();
    expect(history).toContain('outage 12 May: emails never left');
    expect(history).toContain('bulk-resolve');
    const [entry] = (await new AuditLog(redis, prefix).read()).filter((e) => e.action === 'bulk-resolve');
    expect([...entry!.receipts].sort()).toEqual([keys['b1'], keys['b3']].sort());
    expect(entry).toMatchObject({
      detail: { name: 'outage 12 May: emails never left', matched: 3, resolved: 2, filter: { tenant: 'bulk-co' } },
    });
    expect((entry!.detail['skipped'] as { redisKey: string }[]).map((s) => s.redisKey)).toEqual([keys['b2']]);
    noTrouble(trouble);
    await context.close();
  });

  it('finds a receipt by BullMQ job id, by idempotency key and by a pasted receipt key', async () => {
    const { context, page, trouble } = await openPage(browser);
    await signIn(page, OPERATOR);
    const record = (await store.listRun('acme', 'run-find'))[0]!;
    const search = async (q: string, kind: string) => {
      await page.goto(`${server.url}find`);
      await page.fill('input[name=q]', q);
      await Promise.all([page.waitForURL(/find\?q=/), page.click('form.filters button')]);
      const group = page.locator(`.find-group[data-kind="${kind}"]`);
      await expect(group.locator('li a').first().getAttribute('href')).resolves.toBe(
        `/receipt?key=${encodeURIComponent(keys['find']!).replace(/%20/g, '+')}`,
      );
      return group;
    };
    await search(jobs['find']!.id!, 'BullMQ job');
    await screenshots(page, 'find');
    await search(idempotencyKeyFor(record.key), 'idempotency key');
    await search(keys['find']!, 'receipt key');
    // A pasted BullMQ job key (prefix:queue:id) too.
    await search(`${prefix}:tools:${jobs['find']!.id}`, 'BullMQ job');
    await page.goto(`${server.url}run?tenant=acme&run=run-timeline`);
    await expect(page.locator('tbody tr').count()).resolves.toBe(2);
    await expect(page.locator('#resume-note').textContent()).resolves.toContain('create_ticket');
    await screenshots(page, 'run');
    noTrouble(trouble);
    await context.close();
  });

  it('renders a hostile tenant and a result holding </script> as text: no dialog, no console error', async () => {
    const { context, page, trouble } = await openPage(browser);
    await signIn(page, OPERATOR);
    await page.fill('input[name=tenant]', XSS_TENANT);
    await Promise.all([page.waitForURL(/tenant=/), page.click('form.filters button')]);
    await expect(page.locator('tbody tr td').first().textContent()).resolves.toBe(XSS_TENANT);
    await Promise.all([page.waitForURL(/\/receipt\?/), page.locator('tbody tr a', { hasText: 'open' }).click()]);
    await page.fill('#resolve-completed textarea[name=result]', JSON.stringify(SCRIPT_RESULT));
    await Promise.all([page.waitForURL(/notice=resolved/), page.click('#resolve-completed button')]);
    await expect(page.locator('td', { hasText: XSS_TENANT }).first().textContent()).resolves.toBe(XSS_TENANT);
    const result = page.locator('table.fields tr', { has: page.locator('th', { hasText: /^result$/ }) }).locator('td');
    await expect(result.textContent()).resolves.toBe(SCRIPT_RESULT);
    await page.click(`text=run-xss`);
    await expect(page.locator('main p').first().textContent()).resolves.toContain(XSS_TENANT);
    await page.click('nav >> text=Counts');
    await expect(page.locator('table').first().textContent()).resolves.toContain(XSS_TENANT);
    await screenshots(page, 'counts');
    await page.goto(`${server.url}find?q=${encodeURIComponent(XSS_TENANT)}`);
    await expect(page.locator('.find-group[data-kind=tenant]').textContent()).resolves.toContain(XSS_TENANT);
    // Nothing from Redis became markup.
    expect(await page.locator('img').count()).toBe(0);
    expect(await page.locator('script').count()).toBe(0);
    noTrouble(trouble);
    await context.close();
  });

  it('a read-only token sees the pages but cannot resolve', async () => {
    const { context, page, trouble } = await openPage(browser);
    await signIn(page, READER);
    await page.goto(`${server.url}receipt?key=${encodeURIComponent(keys['find']!)}`);
    await expect(page.locator('main').textContent()).resolves.toContain('Read-only: an operator token is needed to resolve.');
    expect(await page.locator('form#resolve-completed').count()).toBe(0);
    const csrf = (await context.cookies()).find((c) => c.name === 'trc_console_csrf')!.value;
    const record = (await store.listRun('acme', 'run-find'))[0]!;
    const refused = await page.request.post(`${server.url}receipt/resolve`, {
      form: { csrf, key: keys['find']!, attempts: '1', epoch: record.epoch, outcome: 'failed', error: 'x' },
      headers: { Origin: server.url.replace(/\/$/, '') },
      maxRedirects: 0,
    });
    expect(refused.status()).toBe(403);
    expect(await refused.text()).toContain('read-only');
    expect(await store.inspect(record.key)).toMatchObject({ status: 'running', attempts: 1 });
    noTrouble(trouble);
    await context.close();
  });
});

describe('console security', () => {
  it('refuses to bind beyond loopback without a token', async () => {
    await expect(startConsoleServer({ redis, prefix, host: '0.0.0.0', port: 0 })).rejects.toBeInstanceOf(ConsoleTokenRequiredError);
  });

  it('bound beyond loopback, refuses every request without the token and answers with it', async () => {
    const open = await startConsoleServer({
      redis,
      prefix,
      host: '0.0.0.0',
      port: 0,
      tokens: { operator: OPERATOR, read: READER },
      onError: () => undefined,
    });
    const base = `http://127.0.0.1:${new URL(open.url.replace('[::]', '127.0.0.1').replace('0.0.0.0', '127.0.0.1')).port}`;
    try {
      const paths = [
        '/',
        '/find?q=acme',
        `/receipt?key=${encodeURIComponent(keys['find']!)}`,
        '/run?tenant=acme&run=run-find',
        '/bulk?tenant=acme&preview=1',
        '/counts',
        '/audit',
        '/console.css',
        '/nope',
      ];
      for (const path of paths) {
        for (const headers of [
          {},
          { Authorization: 'Bearer wrong-token-0123456789' },
          { Cookie: 'trc_console_token=wrong-token-0123456789' },
        ] as Record<string, string>[]) {
          const res = await fetch(base + path, { headers });
          const body = await res.text();
          expect({ path, status: res.status }).toEqual({ path, status: 401 });
          expect(body).not.toContain('acme');
          expect(body).not.toContain('send_email');
          expect(res.headers.get('content-security-policy')).toContain("default-src 'none'");
        }
      }
      const post = await fetch(`${base}/receipt/resolve`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
        body: `key=${encodeURIComponent(keys['find']!)}&attempts=1&outcome=failed&error=x`,
      });
      expect(post.status).toBe(401);
      const withToken = await fetch(`${base}/counts`, { headers: { Authorization: `Bearer ${READER}` } });
      expect(withToken.status).toBe(200);
      expect(await withToken.text()).toContain('acme');
    } finally {
      await open.close();
    }
  });

  it('refuses a write without its CSRF token or from another origin, even with the operator token', async () => {
    const record = (await store.listRun('acme', 'run-find'))[0]!;
    const form = `key=${encodeURIComponent(keys['find']!)}&attempts=1&epoch=${record.epoch}&outcome=failed&error=x`;
    const headers = { Authorization: `Bearer ${OPERATOR}`, 'Content-Type': 'application/x-www-form-urlencoded' };
    const missing = await fetch(`${server.url}receipt/resolve`, { method: 'POST', headers, body: form });
    expect(missing.status).toBe(403);
    const csrf = 'A'.repeat(32);
    const foreign = await fetch(`${server.url}receipt/resolve`, {
      method: 'POST',
      headers: { ...headers, Cookie: `trc_console_csrf=${csrf}`, Origin: 'https://evil.example' },
      body: `${form}&csrf=${csrf}`,
    });
    expect(foreign.status).toBe(403);
    expect(await foreign.text()).toContain('another origin');
    expect(await store.inspect(record.key)).toMatchObject({ status: 'running', attempts: 1 });
  });
});
