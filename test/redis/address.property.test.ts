/**
 * Where a receipts client connects, as messages name it: whatever the
 * password, it never appears (only `***`), and the rest of the URL (scheme,
 * user, host, port, database) is kept as given.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { maskedUrl } from '../../src/core/errors.js';
import { ioredisAddress, nodeRedisAddress, serverUrl } from '../../src/redis/connection/clients/address.js';

const password = fc.string({ minLength: 1, maxLength: 40 }).filter((p) => p !== '*' && !'***'.includes(p));
const host = fc.constantFrom('127.0.0.1', 'redis.internal', '10.0.0.5', '::1');
const port = fc.integer({ min: 1, max: 65535 });
const db = fc.integer({ min: 0, max: 15 });

describe('maskedUrl', () => {
  it('never shows the password, and keeps everything else', () => {
    fc.assert(
      fc.property(password, fc.constantFrom('redis', 'rediss', 'postgres'), port, (secret, scheme, p) => {
        const url = new URL(`${scheme}://user@example.com:${p}/db`);
        url.password = secret;
        const shown = maskedUrl(url.href);
        expect(shown).toBe(`${scheme}://user:***@example.com:${p}/db`);
        expect(maskedUrl(shown)).toBe(shown);
      }),
    );
  });

  it('says so for text that is no URL', () => {
    expect(maskedUrl('not a url')).toBe('(an unparseable URL)');
  });
});

describe('serverUrl', () => {
  it('shows a password only as ***, with the scheme, user, host, port and database the options give', () => {
    fc.assert(
      fc.property(
        fc.option(password, { nil: undefined }),
        fc.option(fc.constantFrom('app', 'default'), { nil: undefined }),
        host,
        port,
        db,
        fc.boolean(),
        (secret, username, h, p, d, tls) => {
          const shown = serverUrl({ host: h, port: p, db: d, username, password: secret, ...(tls ? { tls: {} } : {}) });
          const parsed = new URL(shown);
          expect(parsed.protocol).toBe(tls ? 'rediss:' : 'redis:');
          expect(parsed.hostname.replace(/^\[|\]$/g, '')).toBe(h);
          expect(Number(parsed.port)).toBe(p);
          expect(parsed.username).toBe(username ?? '');
          expect(parsed.password).toBe(secret === undefined ? '' : '***');
          expect(parsed.pathname).toBe(d === 0 ? '' : `/${d}`);
        },
      ),
    );
  });

  it('names a Unix socket, and Sentinels with their master', () => {
    expect(serverUrl({ path: '/run/redis.sock', password: 'x' })).toBe('unix:///run/redis.sock');
    expect(ioredisAddress({ sentinels: [{ host: 's1', port: 26379 }, { host: 's2' }], name: 'receipts', password: 'x' })).toBe(
      'the Sentinels s1:26379, s2:26379 (master receipts)',
    );
    expect(nodeRedisAddress({ url: 'redis://default:s3cret@r:6380/2' })).toBe('redis://default:***@r:6380/2');
    expect(nodeRedisAddress({ socket: { host: 'r', port: 6380 }, password: 's3cret', database: 2 })).toBe('redis://:***@r:6380/2');
  });
});
