/**
 * Two attacks and one near miss, in Chromium against receipts left by a
 * SIGKILLed worker: a page that rebinds its own name to 127.0.0.1 (the
 * browser's resolver plays the attacker's DNS) reads nothing and settles
 * nothing; a host given with --allowed-host works; and tenant `"acme "` is
 * its own tenant in the filter, the Counts link, Find and bulk resolve, never
 * `"acme"`.
 */
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startConsoleServer, type ConsoleServer } from '../../src/console/index.js';
import { ReceiptStore } from '../../src/redis/receipts/store.js';
import { startRedis, type RedisHandle } from '../support/redis.js';
import { emailJob, killMidEffect, launchChromium, openPage } from './support.js';

let handle: RedisHandle;
let redis: Redis;
let queue: Queue;
let store: ReceiptStore;
let server: ConsoleServer;
let browser: Browser;
let port: number;
const keys: Record<'spaced' | 'plain' | 'victim', string> = { spaced: '', plain: '', victim: '' };

beforeAll(async () => {
  handle = await startRedis();
  redis = new Redis(handle.url, { maxRetriesPerRequest: null });
  queue = new Queue('tools', { connection: new Redis(handle.url, { maxRetriesPerRequest: null }), prefix: handle.prefix });
  store = new ReceiptStore({ redis, prefix: handle.prefix });
  await killMidEffect({ url: handle.url, prefix: handle.prefix, queue }, [
    emailJob('acme ', 'run-spaced', 'toolu_spaced'),
    emailJob('acme', 'run-plain', 'toolu_plain'),
    emailJob('victim-co', 'run-victim', 'toolu_victim'),
  ]);
  for (const [name, tenant, run] of [
    ['spaced', 'acme ', 'run-spaced'],
    ['plain', 'acme', 'run-plain'],
    ['victim', 'victim-co', 'run-victim'],
  ] as const) {
    keys[name] = (await store.listRun(tenant, run))[0]!.redisKey;
  }
  // The pages below list these calls as ambiguous: wait until each lease has passed on the server clock.
  for (const deadline = Date.now() + 30_000; ; await new Promise((r) => setTimeout(r, 50))) {
    const read = await store.inspectRedisKeys(Object.values(keys));
    if (read.every((record) => record?.leaseExpired === true)) break;
    if (Date.now() > deadline) throw new Error(`the killed worker's leases did not pass: ${JSON.stringify(read)}`);
  }
  server = await startConsoleServer({ redis, prefix: handle.prefix, port: 0, allowedHosts: ['ops.example'], onError: () => undefined });
  port = Number(new URL(server.url).port);
  // The browser's resolver answers as a rebinding DNS server does once it has switched: the attacker's name is 127.0.0.1.
  browser = await launchChromium([
    '--host-resolver-rules=MAP rebind.example 127.0.0.1, MAP ops.example 127.0.0.1',
    // Chromium's own guard against public pages reaching local addresses, off: the console must hold without it, as in browsers that have none.
    '--disable-features=LocalNetworkAccessChecks,BlockInsecurePrivateNetworkRequests,PrivateNetworkAccessSendPreflights',
  ]);
}, 180_000);

afterAll(async () => {
  await browser?.close();
  await server?.close();
  await queue?.close();
  redis?.disconnect();
  await handle?.stop();
});

const statusOf = async (key: string) => (await store.inspectRedisKeys([key]))[0];

describe('DNS rebinding, in a browser', () => {
  it('a page on a rebound name reads no receipt and settles none; a name given with --allowed-host is served', async () => {
    const { context, page } = await openPage(browser);
    const attackerPage = `http://rebind.example:${port}/innocent`;
    // The attacker's page, as its server sent it before the name was rebound; everything after goes to the console.
    await page.route(attackerPage, (route) =>
      route.fulfill({ status: 200, contentType: 'text/html', body: '<!doctype html><title>cats</title><p>cats</p>' }),
    );
    await page.goto(attackerPage);
    const loot = await page.evaluate(async (key: string) => {
      const counts = await fetch('/counts');
      const receipt = await fetch(`/receipt?key=${encodeURIComponent(key)}`);
      const text = await receipt.text();
      const csrf = /name="csrf" value="([^"]+)"/.exec(text)?.[1] ?? '';
      const epoch = /name="epoch" value="([^"]*)"/.exec(text)?.[1] ?? '';
      const resolve = await fetch('/receipt/resolve', {
        method: 'POST',
        body: new URLSearchParams({ csrf, key, attempts: '1', epoch, outcome: 'failed', error: 'rebound' }),
        redirect: 'manual',
      });
      return { counts: counts.status, receipt: receipt.status, text, resolve: resolve.status };
    }, keys.victim);
    expect(loot).toMatchObject({ counts: 421, receipt: 421, resolve: 421 });
    expect(loot.text).not.toContain('victim-co');
    expect(loot.text).not.toContain('send_email');
    expect(await statusOf(keys.victim)).toMatchObject({ status: 'running', resolvedMs: null });

    // The same browser on a name the operator gave: the console as usual.
    const ops = await page.goto(`http://ops.example:${port}/`);
    expect(ops?.status()).toBe(200);
    await expect(page.locator('tbody tr', { hasText: 'run-victim' }).count()).resolves.toBe(1);
    await context.close();
  });
});

describe('a tenant with a trailing space', () => {
  it('is its own tenant in the filter, the Counts link, Find and bulk resolve; "acme" is left alone', async () => {
    const { context, page, trouble } = await openPage(browser);
    const tenantCells = () => page.locator('tbody tr td:first-child').allTextContents();

    await page.goto(server.url);
    await page.fill('input[name=tenant]', 'acme ');
    await Promise.all([page.waitForURL(/tenant=acme\+/), page.click('form.filters button')]);
    expect(await tenantCells()).toEqual(['acme ']);
    await expect(page.locator('tbody tr td').nth(1).textContent()).resolves.toBe('run-spaced');
    await expect(page.locator('.exact-id').textContent()).resolves.toContain('"acme "');
    await expect(page.locator('input[name=tenant]').inputValue()).resolves.toBe('acme ');
    await page.fill('input[name=tenant]', 'acme');
    await Promise.all([page.waitForURL(/tenant=acme(&|$)/), page.click('form.filters button')]);
    expect(await tenantCells()).toEqual(['acme']);

    // Counts: each tenant's row links to its own receipts.
    await page.goto(`${server.url}counts`);
    const spacedRow = page.locator('tbody tr').filter({ has: page.locator('td:first-child', { hasText: /^acme $/ }) });
    await expect(spacedRow.count()).resolves.toBe(1);
    await Promise.all([page.waitForURL(/tenant=acme\+/), spacedRow.locator('a').click()]);
    expect(await tenantCells()).toEqual(['acme ']);

    // Find: the exact tenant's runs, not the other's.
    await page.goto(`${server.url}find?q=${encodeURIComponent('acme ')}`);
    await expect(page.locator('.find-group[data-kind=tenant] li').allTextContents()).resolves.toEqual(['Run run-spaced of tenant acme ']);
    await page.goto(`${server.url}find?q=acme`);
    await expect(page.locator('.find-group[data-kind=tenant] li').allTextContents()).resolves.toEqual(['Run run-plain of tenant acme']);

    // Bulk resolve: the preview and the settle cover "acme " alone.
    await page.goto(`${server.url}bulk`);
    await page.fill('input[name=tenant]', 'acme ');
    await Promise.all([page.waitForURL(/preview=1/), page.click('form.filters button')]);
    await expect(page.locator('#bulk-count').textContent()).resolves.toBe('1');
    expect(await page.locator('#bulk-preview tbody tr td:first-child').allTextContents()).toEqual(['acme ']);
    await page.fill('input[name=name]', 'spaced tenant checked');
    await page.fill('input[name=error]', 'never sent');
    await page.check('input[name=confirm]');
    await Promise.all([page.waitForURL(/\/bulk\/job\?/), page.click('#bulk-confirm button')]);
    await page.waitForSelector('#bulk-status[data-finished=yes]', { timeout: 30_000 });
    await expect(page.locator('#bulk-resolved').textContent()).resolves.toBe('1');
    expect(await statusOf(keys.spaced)).toMatchObject({ status: 'failed', error: 'never sent' });
    expect(await statusOf(keys.plain)).toMatchObject({ status: 'running', resolvedMs: null });
    expect(trouble).toEqual({ dialogs: [], consoleErrors: [], pageErrors: [] });
    await context.close();
  });
});
