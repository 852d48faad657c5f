/**
 * DNS rebinding: the console answers only for loopback names and the hosts it
 * was given, on every page and every form, token or not, before anything is
 * read from Redis; how strictly the Host header is read; and which hosts a
 * console bound beyond loopback answers for.
 */
import fc from 'fast-check';
import { Redis } from 'ioredis';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { networkInterfaces } from 'node:os';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConsoleOptionsError, createConsoleHandler, startConsoleServer, type ConsoleServer } from '../../src/console/index.js';
import { boundHosts, hostText, isLoopbackName, parseAllowedHost, parseHost } from '../../src/http/hosts.js';
import { CONSOLE_ACTIONS, CONSOLE_PAGES } from '../../src/console/routes.js';
import { makeAmbiguous } from '../cli/support.js';
import { freshKey, useRedis } from '../support/redis-fixture.js';
import { cookieOf, csrfFieldOf, send, sendRaw } from './support-http.js';

const fixture = useRedis();
const OPERATOR = 'hosts-operator-token-0123456789';
const servers: ConsoleServer[] = [];
let prefix: string;
let receiptKey: string;
let open: ConsoleServer;
let guarded: ConsoleServer;
const portOf = (s: ConsoleServer) => (s.server.address() as AddressInfo).port;

beforeAll(async () => {
  prefix = `${fixture.handle().prefix}hosts`;
  const store = fixture.store({ prefix });
  const key = freshKey({ tenantId: 'acme', runId: 'run-rebind' });
  await makeAmbiguous(store, key);
  receiptKey = store.redisKey(key);
  const redis = fixture.connect();
  open = await startConsoleServer({
    redis,
    prefix,
    port: 0,
    allowedHosts: ['ops.example.com', 'pinned.example:9999'],
    onError: () => undefined,
  });
  guarded = await startConsoleServer({ redis, prefix, port: 0, tokens: { operator: OPERATOR }, onError: () => undefined });
  servers.push(open, guarded);
});

afterAll(async () => {
  await Promise.all(servers.map((s) => s.close()));
});

/** A query that makes each page read something (a receipt, a run, a preview). */
const PAGE_QUERY: Record<(typeof CONSOLE_PAGES)[number], () => string> = {
  '/': () => '?tenant=acme',
  '/approvals': () => '?tenant=acme',
  '/find': () => '?q=acme',
  '/receipt': () => `?key=${encodeURIComponent(receiptKey)}`,
  '/run': () => '?tenant=acme&run=run-rebind',
  '/bulk': () => '?tenant=acme&preview=1',
  '/bulk/job': () => '?id=x',
  '/counts': () => '',
  '/audit': () => '',
  '/console.css': () => '',
  '/favicon.ico': () => '',
};

/** The fields of each form, as the console's own page would post them (with the CSRF token given). */
const ACTION_FORM: Record<(typeof CONSOLE_ACTIONS)[number], (csrf: string) => Record<string, string>> = {
  '/login': (csrf) => ({ csrf, token: OPERATOR }),
  '/receipt/resolve': (csrf) => ({ csrf, key: receiptKey, attempts: '1', outcome: 'failed', error: 'rebound' }),
  '/receipt/retry': (csrf) => ({ csrf, key: receiptKey }),
  '/bulk/start': (csrf) => ({ csrf, draft: 'x', name: 'rebound', confirm: 'yes', outcome: 'failed', error: 'rebound' }),
  '/approvals/decide': (csrf) => ({ csrf, key: receiptKey, epoch: 'e', args: 'a', decision: 'deny' }),
};

describe('a Host the console does not answer for', () => {
  it('gets 421 on every page and every form, with or without a matching Origin, token or not, with a genuine CSRF token', async () => {
    for (const server of [open, guarded]) {
      const port = portOf(server);
      const auth: Record<string, string> = server === guarded ? { authorization: `Bearer ${OPERATOR}` } : {};
      // A genuine token and cookie, from a page the console served on loopback: only the Host stops what follows.
      const genuine = await send(port, '/', { headers: auth });
      expect(genuine.status).toBe(200);
      const csrf = csrfFieldOf(
        (await send(port, `/receipt?key=${encodeURIComponent(receiptKey)}`, { headers: { ...auth, cookie: cookieOf(genuine) } })).body,
      )!;
      expect(csrf).toBeDefined();
      for (const host of [`rebind.example:${port}`, 'rebind.example', `localhost.evil.example:${port}`]) {
        for (const origin of [undefined, `http://${host}`]) {
          const headers = { ...auth, host, cookie: cookieOf(genuine), ...(origin ? { origin } : {}) };
          for (const path of CONSOLE_PAGES) {
            const res = await send(port, path + PAGE_QUERY[path](), { headers });
            expect({ path, host, origin, status: res.status }).toEqual({ path, host, origin, status: 421 });
            expect(res.headers['content-type']).toBe('text/plain; charset=utf-8');
            expect(res.headers['set-cookie']).toBeUndefined();
            expect(res.body).toContain('answers only for localhost, 127.0.0.0/8, [::1]');
            expect(res.body).not.toContain('acme');
            expect(res.body).not.toContain('ops.example.com');
          }
          for (const path of CONSOLE_ACTIONS) {
            const res = await send(port, path, { method: 'POST', headers, body: new URLSearchParams(ACTION_FORM[path](csrf)).toString() });
            expect({ path, host, origin, status: res.status }).toEqual({ path, host, origin, status: 421 });
            expect(res.headers['set-cookie']).toBeUndefined();
          }
        }
      }
    }
    const record = (await fixture.store({ prefix }).inspectRedisKeys([receiptKey]))[0];
    expect(record).toMatchObject({ status: 'running', attempts: 1, resolvedMs: null });
  });

  it('is refused before anything is read from Redis', async () => {
    // A connection to nothing: a page that read Redis would answer 503.
    const dead = new Redis({ port: 1, lazyConnect: true, enableOfflineQueue: false, maxRetriesPerRequest: 0, retryStrategy: () => null });
    dead.on('error', () => undefined);
    const server: Server = createServer(createConsoleHandler({ redis: dead, prefix, onError: () => undefined }));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const port = (server.address() as AddressInfo).port;
      expect((await send(port, '/counts')).status).toBe(503);
      expect((await send(port, '/counts', { headers: { host: 'rebind.example' } })).status).toBe(421);
      expect((await send(port, '/receipt/resolve', { method: 'POST', headers: { host: 'rebind.example' }, body: 'csrf=x' })).status).toBe(
        421,
      );
    } finally {
      server.closeAllConnections();
      server.close();
      dead.disconnect();
    }
  });
});

describe('the Host header, read strictly', () => {
  it('answers loopback names and configured hosts (any case, any port unless one was configured) and refuses everything else', async () => {
    const port = portOf(open);
    const answered = [
      'localhost',
      `localhost:${port}`,
      `LocalHost:${port}`,
      '127.0.0.1',
      `127.0.0.1:${port}`,
      `127.255.10.9:${port}`,
      `[::1]:${port}`,
      '[0:0:0:0:0:0:0:1]',
      'ops.example.com',
      `OPS.Example.COM:${port}`,
      'pinned.example:9999',
    ];
    const refused = [
      '',
      ' ',
      'localhost.',
      `localhost.:${port}`,
      'localhost:',
      'localhost:0',
      'localhost:99999',
      'localhost:08787',
      'localhost:80:80',
      '127.0.0.256',
      '127.1',
      '0x7f.0.0.1',
      '2130706433',
      '127.0.0.01',
      '::1',
      '[::1',
      '[::ffff:127.0.0.1]',
      '[fe80::1%25lo]',
      'user@localhost',
      'localhost evil',
      'localhost/x',
      '.localhost',
      'evil.localhost',
      'localhost.evil.example',
      'ops.example.com.',
      'sub.ops.example.com',
      'pinned.example',
      'pinned.example:9998',
      'xn--lcalhost-xxa',
      'lоcalhost', // a Cyrillic o
    ];
    for (const host of answered)
      expect({ host, status: (await sendRaw(port, `GET /counts HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`)).status }).toEqual({
        host,
        status: 200,
      });
    for (const host of refused) {
      const res = await sendRaw(port, `GET /counts HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`);
      expect({ host, status: res.status, data: res.body.includes('Counts') }).toEqual({ host, status: 421, data: false });
    }
  });

  it('refuses two Host headers, none, and an absolute-form target naming another host', async () => {
    const port = portOf(open);
    const raw = async (text: string) => (await sendRaw(port, text)).status;
    expect(await raw('GET /counts HTTP/1.1\r\nHost: localhost\r\nHost: rebind.example\r\nConnection: close\r\n\r\n')).toBe(421);
    expect(await raw('GET /counts HTTP/1.1\r\nHost: rebind.example\r\nHost: localhost\r\nConnection: close\r\n\r\n')).toBe(421);
    expect(await raw('GET /counts HTTP/1.0\r\n\r\n')).toBe(421);
    expect(await raw('GET http://rebind.example/counts HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n')).toBe(421);
    expect(await raw(`GET http://localhost:${port}/counts HTTP/1.1\r\nHost: rebind.example\r\nConnection: close\r\n\r\n`)).toBe(421);
    expect(await raw('GET http://user@localhost/counts HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n')).toBe(421);
    expect(await raw('GET * HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n')).toBe(421);
    // An absolute-form target on an answered host, with an answered Host, is served.
    expect(await raw(`GET http://localhost:${port}/counts HTTP/1.1\r\nHost: localhost:${port}\r\nConnection: close\r\n\r\n`)).toBe(200);
  });

  it('parses to one canonical form: lower case, IPv6 compressed, read back as itself', () => {
    const ascii = fc.string({ unit: fc.constantFrom(...'abcLOC.:-_[]0123456789f'.split('')), maxLength: 24 });
    fc.assert(
      fc.property(ascii, (text) => {
        const parsed = parseHost(text);
        expect(parseHost(text.toUpperCase())).toEqual(parsed);
        if (parsed === undefined) return;
        expect(parseHost(hostText(parsed))).toEqual(parsed);
        expect(parsed.name).toBe(parsed.name.toLowerCase());
        expect(parsed.name.endsWith('.')).toBe(false);
      }),
    );
    expect(parseHost('[0:0::1]:80')).toEqual({ name: '[::1]', port: 80 });
    expect(isLoopbackName('127.0.0.1') && isLoopbackName('[::1]') && isLoopbackName('localhost')).toBe(true);
    expect(parseAllowedHost('fd00::5', (message) => new Error(message))).toEqual({ name: '[fd00::5]', port: undefined });
    for (const bad of ['', '*', 'http://ops.example.com', 'ops.example.com/', 'ops.example.com.', 'ops example', '*.example.com']) {
      expect(() => createConsoleHandler({ redis: fixture.connect(), allowedHosts: [bad] })).toThrow(ConsoleOptionsError);
    }
    expect(() => createConsoleHandler({ redis: fixture.connect(), allowedHosts: 'ops.example.com' as never })).toThrow(ConsoleOptionsError);
  });
});

describe('a console bound beyond loopback', () => {
  it("answers for the address it binds; bound to 0.0.0.0, for this machine's addresses; never for a name it was not given", async () => {
    expect(boundHosts('127.0.0.1')).toEqual([]);
    expect(boundHosts('::1')).toEqual([]);
    expect(boundHosts('10.0.0.5')).toEqual(['10.0.0.5']);
    expect(boundHosts('ops-box.internal')).toEqual(['ops-box.internal']);
    const addresses = Object.values(networkInterfaces()).flatMap((l) => (l ?? []).map((a) => a.address));
    expect(new Set(boundHosts('0.0.0.0'))).toEqual(new Set(addresses.filter((a) => a !== '127.0.0.1' && a !== '::1')));

    const wide = await startConsoleServer({
      redis: fixture.connect(),
      prefix,
      host: '0.0.0.0',
      port: 0,
      tokens: { operator: OPERATOR },
      allowedHosts: ['ops.example.com'],
      onError: () => undefined,
    });
    servers.push(wide);
    expect(wide.url).toBe(`http://127.0.0.1:${portOf(wide)}/`);
    expect(wide.allowedHosts).toContain('ops.example.com');
    const port = portOf(wide);
    const auth = { authorization: `Bearer ${OPERATOR}` };
    const ipv4 = addresses.filter((a) => !a.includes(':'));
    expect(ipv4.length).toBeGreaterThan(0);
    for (const address of ipv4)
      expect((await send(port, '/counts', { headers: { ...auth, host: `${address}:${port}` } })).status).toBe(200);
    expect((await send(port, '/counts', { headers: { ...auth, host: `ops.example.com:${port}` } })).status).toBe(200);
    expect((await send(port, '/counts', { headers: { ...auth, host: `rebind.example:${port}` } })).status).toBe(421);
    expect((await send(port, '/counts', { headers: { ...auth, host: `${ipv4[0]}.nip.io:${port}` } })).status).toBe(421);
  });
});
