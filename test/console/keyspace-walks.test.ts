/**
 * No console page walks the keyspace: every page is requested on a Redis of
 * its own that holds receipts (one ambiguous, one awaiting approval), limit
 * counts of every scope, and an audit entry, and the server's own command
 * counts (INFO commandstats) must show no SCAN or KEYS for any of them.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { startConsoleServer, type ConsoleServer } from '../../src/console/index.js';
import { defineLimit, LimitStore } from '../../src/limits/index.js';
import { ReceiptStore } from '../../src/redis/index.js';
import { startRedis, type RedisHandle } from '../support/redis.js';
import { send } from './support-http.js';

const TOKEN = 'walks-operator-token-0123456789';
let handle: RedisHandle;
let redis: Redis;
let server: ConsoleServer;
const call = { tenantId: 'acme', runId: 'run-1', toolName: 'send_email', argsHash: 'a1' };

beforeAll(async () => {
  handle = await startRedis();
  redis = new Redis(handle.url);
  const receipts = new ReceiptStore({ redis, prefix: handle.prefix, leaseMs: 50 });
  const done = await receipts.claim(call, { effect: 'opaque' });
  await receipts.complete(call, done.fence!, { sent: true });
  await receipts.claim({ ...call, argsHash: 'a2' }, { effect: 'opaque' }); // lapses: ambiguous
  const limits = new LimitStore({ redis, prefix: handle.prefix });
  for (const per of ['tenant', 'run', 'global'] as const) {
    const limit = defineLimit({ name: `calls-${per}`, per, max: 5, windowMs: 3_600_000 });
    const reserved = await limits.reserve(limit, call);
    if (reserved.granted) await limits.commit(reserved.reservation);
  }
  await new Promise((r) => setTimeout(r, 100));
  server = await startConsoleServer({ redis, prefix: handle.prefix, port: 0, tokens: { operator: TOKEN }, onError: () => undefined });
});

afterAll(async () => {
  await server?.close();
  redis?.disconnect();
  await handle?.stop();
});

/** Calls of each command since the last CONFIG RESETSTAT. */
async function commandCounts(): Promise<Record<string, number>> {
  const info = await redis.info('commandstats');
  return Object.fromEntries([...info.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)].map((m) => [m[1]!, Number(m[2])]));
}

describe('the console on a Redis holding receipts and limit counts', () => {
  const receiptKey = () => `${handle.prefix}:rcpt:{acme|run-1}:send_email:a2`;
  const pages = () => [
    '/',
    '/?tenant=acme',
    '/approvals',
    '/find?q=acme',
    '/find?q=run-1',
    '/find?q=send_email',
    `/receipt?key=${encodeURIComponent(receiptKey())}`,
    '/run?tenant=acme&run=run-1',
    '/bulk',
    '/counts',
    '/audit',
  ];

  it.each([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10])('page %i answers without SCAN or KEYS', async (index) => {
    const path = pages()[index]!;
    await redis.config('RESETSTAT');
    const answer = await send(Number(new URL(server.url).port), path, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(answer.status, `${path}: ${answer.body.slice(0, 300)}`).toBe(200);
    const counts = await commandCounts();
    expect({ path, scan: counts['scan'] ?? 0, keys: counts['keys'] ?? 0 }).toEqual({ path, scan: 0, keys: 0 });
  });

  it('lists every limit count on the counts page, read from the index', async () => {
    const answer = await send(Number(new URL(server.url).port), '/counts', { headers: { authorization: `Bearer ${TOKEN}` } });
    for (const per of ['tenant', 'run', 'global']) expect(answer.body).toContain(`calls-${per}`);
  });
});

describe('the console under a prefix no run is registered in', () => {
  it('shows the counts page without SCAN, saying nothing is counted and how to count by walking', async () => {
    const empty = await startConsoleServer({ redis, prefix: `${handle.prefix}-unregistered`, port: 0, tokens: { operator: TOKEN } });
    try {
      await redis.config('RESETSTAT');
      const answer = await send(Number(new URL(empty.url).port), '/counts', { headers: { authorization: `Bearer ${TOKEN}` } });
      expect(answer.status).toBe(200);
      expect(answer.body).toContain('No run is registered under this prefix, so nothing is counted here.');
      expect(answer.body).toContain('tool-receipts stats --scan');
      expect((await commandCounts())['scan'] ?? 0).toBe(0);
    } finally {
      await empty.close();
    }
  });
});
