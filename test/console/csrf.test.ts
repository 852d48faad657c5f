/**
 * CSRF tokens the console never issued: empty, chosen by a page (cookies are
 * not port-scoped, so any page on 127.0.0.1 can set the cookie), shaped like
 * the console's own, minted by another console, or minted for another
 * session. Each is refused on every form, with no Origin or Sec-Fetch-Site to
 * help (as from a client that sends neither), and nothing is written; a page
 * never adopts a forged cookie. The Origin checks still stand.
 */
import { createHmac, randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startConsoleServer, type ConsoleServer } from '../../src/console/index.js';
import { CONSOLE_ACTIONS, CONSOLE_PAGES } from '../../src/console/routes.js';
import { AuditLog } from '../../src/redis/operators/audit-log.js';
import type { ReceiptStore } from '../../src/redis/receipts/store.js';
import { makeAmbiguous } from '../cli/support.js';
import { freshKey, useRedis } from '../support/redis-fixture.js';
import { cookieOf, csrfFieldOf, issuedSession, send, type Answer } from './support-http.js';

const fixture = useRedis();
const OPERATOR = 'csrf-operator-token-0123456789';
const READER = 'csrf-reader-token-0123456789';
const servers: ConsoleServer[] = [];
let prefix: string;
let store: ReceiptStore;
let open: ConsoleServer;
let guarded: ConsoleServer;
let other: ConsoleServer;
const portOf = (s: ConsoleServer) => (s.server.address() as AddressInfo).port;

beforeAll(async () => {
  prefix = `${fixture.handle().prefix}csrf`;
  store = fixture.store({ prefix });
  const redis = fixture.connect();
  open = await startConsoleServer({ redis, prefix, port: 0, onError: () => undefined });
  guarded = await startConsoleServer({ redis, prefix, port: 0, tokens: { operator: OPERATOR, read: READER }, onError: () => undefined });
  other = await startConsoleServer({ redis, prefix, port: 0, onError: () => undefined });
  servers.push(open, guarded, other);
});

afterAll(async () => {
  await Promise.all(servers.map((s) => s.close()));
});

/** The CSRF cookie the console issues to `headers`' session, and the token it holds (the one its forms carry). */
const issued = (server: ConsoleServer, headers: Record<string, string> = {}) => issuedSession(portOf(server), headers);

/** A token shaped exactly like the console's, signed with a key the attacker chose. */
function lookalike(): string {
  const nonce = randomBytes(18).toString('base64url');
  return `${nonce}.${createHmac('sha256', randomBytes(32)).update(`${nonce}\0`).digest('base64url')}`;
}

/** Forged (cookie, field) pairs, each with its name. */
async function forgeries(server: ConsoleServer, auth: Record<string, string>): Promise<[string, string | undefined, string | undefined][]> {
  const chosen = 'A'.repeat(32);
  const shaped = lookalike();
  const foreign = await issued(other);
  const mine = await issued(server, auth);
  const another = await issued(server, auth);
  const forgeries: [string, string | undefined, string | undefined][] = [
    ['no cookie, no field', undefined, undefined],
    ['empty cookie and field', '', ''],
    ['a chosen value in both', chosen, chosen],
    ["a value shaped like the console's in both", shaped, shaped],
    ["another console's token in both", foreign.csrf, foreign.csrf],
    ['a genuine cookie, no field', mine.csrf, undefined],
    ['a genuine cookie, an empty field', mine.csrf, ''],
    ['a genuine cookie, a chosen field', mine.csrf, chosen],
    ['a genuine cookie, the field of another genuine token', mine.csrf, another.csrf],
  ];
  if (server === guarded) {
    // Minted for the read-only token's session, used with the operator's.
    const reader = await issued(server, { authorization: `Bearer ${READER}` });
    forgeries.push(['a token minted for another session', reader.csrf, reader.csrf]);
  }
  return forgeries;
}

describe('forged CSRF tokens', () => {
  it('are refused on every form of a console with and without tokens, and nothing is written', async () => {
    for (const server of [open, guarded]) {
      const port = portOf(server);
      const auth: Record<string, string> = server === guarded ? { authorization: `Bearer ${OPERATOR}` } : {};
      const key = freshKey({ tenantId: `forged-${port}` });
      await makeAmbiguous(store, key);
      const redisKey = store.redisKey(key);
      const epoch = (await store.inspect(key))!.epoch;
      // A real preview, so a forged confirmation names a draft that exists.
      const preview = await send(port, `/bulk?tenant=${key.tenantId}&preview=1`, { headers: auth });
      const draft = /name="draft" value="([^"]+)"/.exec(preview.body)![1]!;
      const forms: Record<(typeof CONSOLE_ACTIONS)[number], Record<string, string>> = {
        '/login': { token: OPERATOR },
        '/receipt/resolve': { key: redisKey, attempts: '1', epoch, outcome: 'failed', error: 'forged' },
        '/receipt/retry': { key: redisKey },
        '/bulk/start': { draft, name: 'forged', confirm: 'yes', outcome: 'failed', error: 'forged' },
        '/approvals/decide': { key: redisKey, epoch, args: key.argsHash, decision: 'approve' },
      };
      for (const [what, cookie, field] of await forgeries(server, auth)) {
        for (const path of CONSOLE_ACTIONS) {
          const body = new URLSearchParams({ ...forms[path], ...(field !== undefined ? { csrf: field } : {}) }).toString();
          const headers = { ...(path === '/login' ? {} : auth), ...(cookie !== undefined ? { cookie: `trc_console_csrf=${cookie}` } : {}) };
          const res = await send(port, path, { method: 'POST', headers, body });
          expect({ server: server === open ? 'no token' : 'tokens', what, path, status: res.status }).toEqual({
            server: server === open ? 'no token' : 'tokens',
            what,
            path,
            status: 403,
          });
          expect(res.body).toContain('not one this console issued');
          expect(String(res.headers['set-cookie'] ?? '')).not.toContain('trc_console_token');
        }
      }
      expect(await store.inspect(key)).toMatchObject({ status: 'running', attempts: 1, resolvedMs: null });
      expect((await new AuditLog(fixture.connect(), prefix).read()).filter((e) => e.receipts.includes(redisKey))).toEqual([]);

      // The genuine token passes, the same request otherwise: the refusals above were the tokens'.
      const genuine = await issued(server, auth);
      const confirmed = await send(port, '/bulk/start', {
        method: 'POST',
        headers: { ...auth, cookie: genuine.cookie },
        body: new URLSearchParams({ ...forms['/bulk/start'], csrf: genuine.csrf }).toString(),
      });
      expect(confirmed.status).toBe(303);
    }
  });

  it('let the sign-in form through only with the token its page issued', async () => {
    const port = portOf(guarded);
    const page = await send(port, '/');
    expect(page.status).toBe(401);
    const csrf = csrfFieldOf(page.body)!;
    const signedIn = await send(port, '/login', {
      method: 'POST',
      headers: { cookie: cookieOf(page) },
      body: new URLSearchParams({ csrf, token: OPERATOR }).toString(),
    });
    expect(signedIn.status).toBe(303);
    expect(cookieOf(signedIn)).toContain(`trc_console_token=${OPERATOR}`);
  });

  it('are never adopted by a page: it sets a token of its own and its forms carry that one', async () => {
    const key = freshKey({ tenantId: 'adopt-co' });
    await makeAmbiguous(store, key);
    const ambiguousKey = store.redisKey(key);
    for (const server of [open, guarded]) {
      const auth: Record<string, string> = server === guarded ? { authorization: `Bearer ${OPERATOR}` } : {};
      const foreign = (await issued(other)).csrf;
      for (const forged of ['', 'A'.repeat(32), lookalike(), foreign]) {
        for (const path of CONSOLE_PAGES) {
          const res: Answer = await send(portOf(server), path + (path === '/receipt' ? `?key=${encodeURIComponent(ambiguousKey)}` : ''), {
            headers: { ...auth, cookie: `trc_console_csrf=${forged}` },
          });
          const fresh = /trc_console_csrf=([^;]+)/.exec(String(res.headers['set-cookie']))?.[1];
          expect({ path, fresh: fresh !== undefined && fresh !== forged }).toEqual({ path, fresh: true });
          // The receipt page's resolve forms carry the fresh token, never the forged one.
          if (path === '/receipt') expect(csrfFieldOf(res.body)).toBe(fresh);
        }
      }
      // A genuine cookie is kept: no new one.
      const genuine = await issued(server, auth);
      const again = await send(portOf(server), '/', { headers: { ...auth, cookie: genuine.cookie } });
      expect(again.headers['set-cookie']).toBeUndefined();
    }
  });

  it('the Origin checks still stand with a genuine token', async () => {
    const port = portOf(open);
    const key = freshKey({ tenantId: 'origin-co' });
    await makeAmbiguous(store, key);
    const genuine = await issued(open);
    const body = new URLSearchParams({
      csrf: genuine.csrf,
      key: store.redisKey(key),
      attempts: '1',
      outcome: 'failed',
      error: 'x',
    }).toString();
    const post = (headers: Record<string, string>) =>
      send(port, '/receipt/resolve', { method: 'POST', headers: { cookie: genuine.cookie, ...headers }, body });
    // Another answered host is another origin.
    expect((await post({ origin: `http://localhost:${port}` })).body).toContain('another origin');
    expect((await post({ origin: 'null' })).status).toBe(403);
    expect((await post({ 'sec-fetch-site': 'same-site' })).status).toBe(403);
    expect((await post({ 'sec-fetch-site': 'cross-site' })).status).toBe(403);
    expect(await store.inspect(key)).toMatchObject({ status: 'running' });
    expect((await post({ origin: `http://127.0.0.1:${port}`, 'sec-fetch-site': 'same-origin' })).status).toBe(303);
    expect(await store.inspect(key)).toMatchObject({ status: 'failed', error: 'x' });
  });
});
