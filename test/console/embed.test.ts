/**
 * The console as an embeddable `(req, res)` handler: mounted under a path
 * (whether the framework strips the mount path, as Express does, or not),
 * behind the embedder's own auth, with the embedder naming the actor.
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { ConsoleOptionsError, createConsoleHandler, type ConsoleHandler } from '../../src/console/index.js';
import { AuditLog } from '../../src/redis/operators/audit-log.js';
import { InvalidKeyPrefixError } from '../../src/redis/keys.js';
import { defineLimit, LimitStore } from '../../src/limits/index.js';
import { makeAmbiguous } from '../cli/support.js';
import { freshKey, useRedis } from '../support/redis-fixture.js';
import { YEAR_MS } from '../support/limit-windows.js';

const fixture = useRedis();
const servers: Server[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => new Promise((r) => (s.closeAllConnections(), s.close(r)))));
});

const BASE = '/ops/receipts';

/** Serves `handler` under BASE; with `strip`, hands it the URL without the mount path, as Express does. */
async function mount(handler: ConsoleHandler, strip: boolean, parsedBody = false): Promise<string> {
  const server = createServer((req, res) => {
    if (!req.url?.startsWith(BASE)) {
      res.statusCode = 404;
      res.end('not the console');
      return;
    }
    if (strip) req.url = req.url.slice(BASE.length) || '/';
    if (parsedBody && req.method === 'POST') {
      // A framework's body parser ran first and left the fields on req.body.
      let text = '';
      req.on('data', (c: Buffer) => (text += c.toString()));
      req.on('end', () => {
        (req as IncomingMessage & { body?: unknown }).body = Object.fromEntries(new URLSearchParams(text));
        handler(req, res);
      });
      return;
    }
    handler(req, res);
  });
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

describe('createConsoleHandler', () => {
  it("shows on the counts page each limit's used and left", async () => {
    const redis = fixture.connect();
    const prefix = `${fixture.handle().prefix}lim`;
    const limits = new LimitStore({ redis, prefix });
    const emails = defineLimit({ name: 'emails', per: 'tenant', max: 5, windowMs: YEAR_MS });
    const browse = defineLimit({ name: 'browse', per: 'tenant', max: 4, windowMs: 60_000, kind: 'sliding' });
    const search = defineLimit({ name: 'search', per: 'tenant', max: 2, windowMs: 60_000, kind: 'bucket', burst: 3 });
    for (const limit of [emails, browse, search]) {
      for (const i of [1, 2]) {
        const r = await limits.reserve(limit, { tenantId: 'acme', runId: 'run-1', toolName: 'send_email', argsHash: `h${i}` });
        if (r.granted) await limits.commit(r.reservation);
      }
    }
    const origin = await mount(createConsoleHandler({ redis, prefix, basePath: `${BASE}/` }), false);
    const page = await (await fetch(`${origin}${BASE}/counts`)).text();
    expect(page).toContain('<h2>Limits</h2>');
    expect(page).toMatch(/<tr><td>emails<\/td><td>tenant<\/td><td>acme<\/td><td>fixed<\/td><td>2<\/td><td>3<\/td><td>5<\/td>/);
    expect(page).toMatch(/<tr><td>browse<\/td><td>tenant<\/td><td>acme<\/td><td>sliding<\/td><td>2<\/td><td>2<\/td><td>4<\/td>/);
    expect(page).toMatch(/<tr><td>search<\/td><td>tenant<\/td><td>acme<\/td><td>bucket \(burst 3\)<\/td><td>2<\/td><td>1<\/td><td>2<\/td>/);
    expect(page).not.toContain('<h2>In-flight caps</h2>');
    // An in-flight cap: its slots held of k, and the calls waiting.
    const cap = defineLimit({ name: 'sessions', per: 'tenant', concurrency: 1, onLimit: 'wait' });
    const keys = limits.caps.keysOf(cap, { tenantId: 'acme' });
    const ask = { leaseMs: 60_000, placeMs: 60_000, waker: '', adopt: false };
    await limits.caps.acquire({ cap, keys, receiptKey: 'receipt-a', token: 'a' }, ask);
    await limits.caps.acquire({ cap, keys, receiptKey: 'receipt-b', token: 'b' }, ask);
    const withCap = await (await fetch(`${origin}${BASE}/counts`)).text();
    expect(withCap).toContain('<h2>In-flight caps</h2>');
    expect(withCap).toMatch(/<tr><td>sessions<\/td><td>tenant<\/td><td>acme<\/td><td>1\/1<\/td><td>1<\/td>/);
  });

  for (const strip of [false, true]) {
    it(`links every page under its mount path (${strip ? 'mount path stripped' : 'full URL'})`, async () => {
      const redis = fixture.connect();
      const origin = await mount(createConsoleHandler({ redis, prefix: fixture.handle().prefix, basePath: `${BASE}/` }), strip);
      const res = await fetch(`${origin}${BASE}/`);
      expect(res.status).toBe(200);
      const page = await res.text();
      for (const path of ['/find', '/bulk', '/counts', '/audit', '/console.css']) expect(page).toContain(`href="${BASE}${path}"`);
      expect(page).not.toMatch(/href="\/(find|bulk|counts|audit)"/);
      expect((await fetch(`${origin}${BASE}/console.css`)).headers.get('content-type')).toContain('text/css');
      expect(res.headers.get('content-security-policy')).toBe(
        "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
      );
    });
  }

  it("records the embedder's actor, and reads a body a framework already parsed", async () => {
    const prefix = `${fixture.handle().prefix}e`;
    const store = fixture.store({ prefix });
    const key = freshKey();
    await makeAmbiguous(store, key);
    const redis = fixture.connect();
    const origin = await mount(
      createConsoleHandler({
        redis,
        prefix,
        basePath: BASE,
        actor: (req) => `alice (sso) via ${req.headers['x-team'] ?? '?'}`,
        source: 'ops-portal',
      }),
      true,
      true,
    );
    const page = await fetch(`${origin}${BASE}/receipt?key=${encodeURIComponent(store.redisKey(key))}`);
    const csrf = /name="csrf" value="([^"]+)"/.exec(await page.text())![1]!;
    const cookie = page.headers
      .getSetCookie()
      .map((c) => c.split(';')[0])
      .join('; ');
    expect(page.headers.getSetCookie()[0]).toMatch(new RegExp(`Path=${BASE}; HttpOnly; SameSite=Strict`));
    const record = (await store.inspect(key))!;
    const res = await fetch(`${origin}${BASE}/receipt/resolve`, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded', Cookie: cookie, Origin: origin, 'X-Team': 'payments' },
      body: new URLSearchParams({
        csrf,
        key: store.redisKey(key),
        attempts: '1',
        epoch: record.epoch,
        outcome: 'completed',
        result: '{"id":"ch_1"}',
      }).toString(),
    });
    expect(res.status).toBe(303);
    expect(res.headers.get('location')).toBe(
      `${BASE}/receipt?key=${encodeURIComponent(store.redisKey(key)).replace(/%20/g, '+')}&notice=resolved`,
    );
    expect(await store.inspect(key)).toMatchObject({ status: 'completed', result: { id: 'ch_1' } });
    const [entry] = await new AuditLog(redis, prefix).read();
    expect(entry).toMatchObject({
      actor: 'alice (sso) via payments',
      source: 'ops-portal',
      action: 'resolve',
      receipts: [store.redisKey(key)],
    });
  });

  it('refuses options it cannot work with', () => {
    const redis = fixture.connect();
    expect(() => createConsoleHandler({ redis, tokens: { operator: 'short' } })).toThrow(ConsoleOptionsError);
    expect(() => createConsoleHandler({ redis, tokens: { operator: 'same-token-0123456789', read: 'same-token-0123456789' } })).toThrow(
      /must differ/,
    );
    expect(() => createConsoleHandler({ redis, basePath: 'ops' })).toThrow(/basePath/);
    expect(() => createConsoleHandler({ redis, prefix: 'a{b}' })).toThrow(InvalidKeyPrefixError);
    expect(() => createConsoleHandler({ redis: undefined as never })).toThrow(/needs `redis`/);
  });
});
