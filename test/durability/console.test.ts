/**
 * The console's writes wait for the durability it is given, as the workers'
 * do: on a primary with no replica, a console asking for one replica shows a
 * resolve, and a bulk resolve, as not acknowledged rather than as done.
 */
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startConsoleServer, type ConsoleServer } from '../../src/console/index.js';
import type { ReceiptStore } from '../../src/redis/receipts/store.js';
import { makeAmbiguous } from '../cli/support.js';
import { cookieOf, issuedSession, send } from '../console/support-http.js';
import { freshKey, useRedis } from '../support/redis-fixture.js';

const fixture = useRedis();
let prefix: string;
let store: ReceiptStore;
let server: ConsoleServer;
let replicas = 0;
const port = () => (server.server.address() as AddressInfo).port;

beforeAll(async () => {
  prefix = `${fixture.handle().prefix}durable-console`;
  store = fixture.store({ prefix });
  const redis = fixture.connect();
  replicas = Number(/connected_slaves:(\d+)/.exec(await redis.info('replication'))?.[1] ?? 0);
  server = await startConsoleServer({ redis, prefix, port: 0, durability: { replicas: 1, timeoutMs: 200 }, onError: () => undefined });
});

afterAll(async () => {
  await server?.close();
});

/** The CSRF cookie this console issues, and the token its forms carry. */
const session = () => issuedSession(port());

describe('a console given durability, on a primary without the replica it asks for', () => {
  it('shows a resolve as not acknowledged, not as resolved', async (ctx) => {
    if (replicas > 0) ctx.skip('this Redis has a replica, so the resolve would be acknowledged');
    const key = freshKey({ tenantId: 'durable-console' });
    await makeAmbiguous(store, key);
    const redisKey = store.redisKey(key);
    const { epoch } = (await store.inspect(key))!;
    const { cookie, csrf } = await session();
    const body = new URLSearchParams({ key: redisKey, attempts: '1', epoch, outcome: 'failed', error: 'checked by hand', csrf });
    const res = await send(port(), '/receipt/resolve', { method: 'POST', headers: { cookie }, body: body.toString() });

    expect(res.headers['location']).toBeUndefined();
    expect(res.status).toBe(400);
    expect(res.body).toContain(`resolve of ${redisKey} was acknowledged by 0 of the 1 replica(s)`);
  });

  it('stops a bulk resolve at its first unacknowledged write, and says why', async (ctx) => {
    if (replicas > 0) ctx.skip('this Redis has a replica, so the resolves would be acknowledged');
    const tenantId = 'durable-bulk';
    await makeAmbiguous(store, freshKey({ tenantId }));
    const preview = await send(port(), `/bulk?tenant=${tenantId}&preview=1`);
    const draft = /name="draft" value="([^"]+)"/.exec(preview.body)![1]!;
    const { cookie, csrf } = await session();
    const body = new URLSearchParams({ draft, name: 'durable', confirm: 'yes', outcome: 'failed', error: 'checked', csrf });
    const started = await send(port(), '/bulk/start', { method: 'POST', headers: { cookie }, body: body.toString() });
    expect(started.status).toBe(303);

    const job = started.headers['location'] as string;
    let page = '';
    for (let tries = 0; tries < 200 && !page.includes('data-finished="yes"'); tries++) {
      page = (await send(port(), job)).body;
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(page).toContain('data-finished="yes"');
    expect(page).toContain('Stopped: resolve of ');
    expect(page).toContain('was acknowledged by 0 of the 1 replica(s)');
  });
});
