/**
 * A claim the client never sent started nothing, so it fails as never sent,
 * with nothing to release: Redis is stopped before the job, so every claim
 * is held while the client reconnects (by the library for ioredis, in its
 * queue for node-redis) or refused outright, and is given up unwritten. The
 * job fails its delivery with `redis.unavailable` and `sent: false` at the
 * store's deadline (or at once when refused), not after the lost-claim
 * release's retries; once Redis is back the next delivery runs the call
 * once, as attempt 1: nothing was ever written.
 */
import { Redis, type RedisOptions } from 'ioredis';
import { createClient } from 'redis';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineTool, withToolReceipts } from '../../src/bullmq/index.js';
import { toolCallArgsHash } from '../../src/core/index.js';
import type { RedisConnection } from '../../src/redis/connection/connection.js';
import { RedisConnectionLostError } from '../../src/redis/index.js';
import { testJob } from '../../src/testing/index.js';
import { faultTestsSupported } from '../support/redis.js';
import { useRedis } from '../support/redis-fixture.js';
import { silent } from './fixture.js';

const redis = useRedis();
const faults = faultTestsSupported();
const closers: Array<() => Promise<unknown>> = [];

afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close().catch(() => undefined);
});

/** An opaque send_email tool that records whom it sent to. */
function emailTool(sent: string[]) {
  return defineTool({ name: 'send_email', input: z.object({ to: z.string() }), effect: 'opaque', execute: ({ to }) => void sent.push(to) });
}

/** Polls `done` every 20 ms, for at most 10 s. */
async function until(done: () => boolean): Promise<void> {
  for (let waited = 0; !done(); waited += 20) {
    if (waited > 10_000) throw new Error('timed out waiting');
    await new Promise((r) => setTimeout(r, 20));
  }
}

async function ioredis(options: RedisOptions = {}) {
  const client = new Redis(redis.handle().url, options);
  client.on('error', () => undefined);
  closers.push(async () => client.disconnect());
  await until(() => client.status === 'ready');
  // The worker knows Redis is down: its client saw the connection close.
  return { connection: client as RedisConnection, down: () => until(() => client.status !== 'ready') };
}

async function nodeRedis(options: { disableOfflineQueue?: boolean } = {}) {
  const client = createClient({ url: redis.handle().url, ...options });
  client.on('error', () => undefined);
  await client.connect();
  closers.push(async () => client.destroy());
  return { connection: client as unknown as RedisConnection, down: () => until(() => !client.isReady) };
}

/**
 * Stops Redis, runs one delivery of a one-email job and returns its error
 * and how long it took; then starts Redis again and runs the next delivery.
 */
async function deliverWhileStopped(
  { connection, down }: { connection: RedisConnection; down: () => Promise<void> },
  extra: { commandTimeoutMs?: number } = {},
) {
  const sent: string[] = [];
  const prefix = `${redis.handle().prefix}:${Math.random().toString(36).slice(2, 8)}`;
  const processor = withToolReceipts({ redis: connection, prefix, tools: [emailTool(sent)], logger: silent, ...extra });
  const input = { to: 'ada@example.com' };
  const data = { tenantId: 'acme', runId: 'run-stopped', calls: [{ id: 'toolu_1', name: 'send_email', input }] };
  // Scripts cached and the connection up before the stop.
  await processor.store.inspect({ tenantId: 'acme', runId: 'run-stopped', toolName: 'send_email', argsHash: 'warm' });

  await redis.handle().kill();
  await down();
  const started = performance.now();
  const error = await processor(testJob(data).job, 'token').then(
    () => undefined,
    (e: unknown) => e,
  );
  const elapsedMs = performance.now() - started;
  await redis.handle().restart();

  const key = { tenantId: 'acme', runId: 'run-stopped', toolName: 'send_email', argsHash: await toolCallArgsHash(input) };
  const retry = async () => processor(testJob(data, { attemptsMade: 1, attempts: 3 }).job, 'token');
  // The client reconnects on its own; until it has, a delivery fails as above and BullMQ would retry it.
  let next;
  for (let tries = 0; next === undefined; tries++) {
    next = await retry().catch((e: unknown) => {
      if (!(e instanceof RedisConnectionLostError) || tries > 50) throw e;
      return new Promise<undefined>((r) => setTimeout(() => r(undefined), 200));
    });
  }
  return { error, elapsedMs, next, sent, receipt: await processor.store.inspect(key) };
}

function expectNeverSent(error: unknown) {
  expect(error).toBeInstanceOf(RedisConnectionLostError);
  expect(error).toMatchObject({ code: 'redis.unavailable', step: 'claim', tool: 'send_email', sent: false, releases: [] });
  expect((error as Error).message).toMatch(/ was not sent \(.*\), so it did not run$/);
}

describe.skipIf(!faults)('a claim against a stopped Redis', () => {
  it("with default ioredis options fails as never sent at the store's deadline (no release retries after it), and the next delivery runs the call once", async () => {
    const { error, elapsedMs, next, sent, receipt } = await deliverWhileStopped(await ioredis(), { commandTimeoutMs: 1_500 });
    expectNeverSent(error);
    expect((error as Error).message).toContain('not sent within 1500 ms: the client had no connection to Redis');
    expect(elapsedMs).toBeGreaterThanOrEqual(1_500);
    expect(elapsedMs).toBeLessThan(4_000);
    expect(next?.results).toEqual([expect.objectContaining({ outcome: 'executed' })]);
    expect(sent).toEqual(['ada@example.com']);
    // Attempt 1: the claim of the stopped delivery never reached Redis.
    expect(receipt).toMatchObject({ status: 'completed', attempts: 1 });
  });

  it('with ioredis enableOfflineQueue: false fails at once as never sent', async () => {
    const { error, elapsedMs, sent, receipt } = await deliverWhileStopped(await ioredis({ enableOfflineQueue: false }));
    expectNeverSent(error);
    expect(elapsedMs).toBeLessThan(2_000);
    expect(sent).toEqual(['ada@example.com']);
    expect(receipt).toMatchObject({ status: 'completed', attempts: 1 });
  });

  it("with node-redis defaults (commands queued while it reconnects) fails as never sent at the store's deadline", async () => {
    const { error, elapsedMs, sent, receipt } = await deliverWhileStopped(await nodeRedis(), { commandTimeoutMs: 1_500 });
    expectNeverSent(error);
    expect((error as Error).message).toContain('not sent within 1500 ms: the client had no connection to Redis');
    expect(elapsedMs).toBeGreaterThanOrEqual(1_500);
    expect(elapsedMs).toBeLessThan(4_000);
    expect(sent).toEqual(['ada@example.com']);
    expect(receipt).toMatchObject({ status: 'completed', attempts: 1 });
  });

  it('with node-redis disableOfflineQueue fails at once as never sent', async () => {
    const { error, elapsedMs, sent, receipt } = await deliverWhileStopped(await nodeRedis({ disableOfflineQueue: true }));
    expectNeverSent(error);
    expect(elapsedMs).toBeLessThan(2_000);
    expect(sent).toEqual(['ada@example.com']);
    expect(receipt).toMatchObject({ status: 'completed', attempts: 1 });
  });
});
