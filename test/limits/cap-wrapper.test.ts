/**
 * In-flight caps through the real wrapper and real BullMQ workers: a call
 * finding every slot taken is refused with the cap's sentence ('refuse'), or
 * parked and woken by the settle that frees a slot, long before its park
 * would end ('wait'), on its own queue or another on the same Redis;
 * waiting calls run in arrival order; a call of an unknown outcome
 * (ambiguous) keeps its slot until its lease passes; the operator's read
 * shows held/k and waiting.
 */
import { Job, Queue, QueueEvents, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { OutcomeUnknownError } from '../../src/core/index.js';
import { defineTool, withToolReceipts, type ToolJobResult } from '../../src/bullmq/index.js';
import { defineLimit, LimitStore } from '../../src/limits/index.js';
import { call, jobData, silent, useLanes } from '../bullmq/fixture.js';

const lane = useLanes();

/** A tool whose calls each wait for the test to let them finish, recording the order they started in. */
function gatedTool() {
  const started: string[] = [];
  const gates = new Map<string, () => void>();
  const tool = defineTool({
    name: 'browse',
    input: z.object({ url: z.string() }),
    effect: 'opaque',
    destructive: false,
    async execute({ url }) {
      started.push(url);
      await new Promise<void>((resolve) => gates.set(url, resolve));
      return `read ${url}`;
    },
  });
  const finish = async (url: string) => {
    await expect.poll(() => gates.has(url), { timeout: 20_000 }).toBe(true);
    gates.get(url)!();
  };
  return { tool, started, finish };
}

const outcomeOf = (job: { returnvalue: unknown }) => (job.returnvalue as ToolJobResult).results[0]!;

describe('withToolReceipts({ limits: [{ concurrency }] })', () => {
  it('refuses a call that finds every slot taken with a sentence naming the cap, and runs it once a slot is free', async () => {
    const l = await lane();
    const t = gatedTool();
    const cap = defineLimit({ name: 'browsing', per: 'tenant', concurrency: 1 });
    l.worker({ tools: [t.tool], limits: [cap], logger: silent }, { concurrency: 4 });
    const first = await l.add(jobData([call('browse', { url: 'a' })], { tenantId: 'acme', runId: 'r1' }));
    await expect.poll(() => t.started, { timeout: 20_000 }).toEqual(['a']);
    const refused = await l.run(jobData([call('browse', { url: 'b' })], { tenantId: 'acme', runId: 'r2' }));
    expect(outcomeOf(refused)).toMatchObject({ outcome: 'rejected', is_error: true });
    expect(outcomeOf(refused).content).toMatch(
      /^This call was not run: the in-flight cap "browsing" \(at most 1 at once per tenant\) has every slot taken/,
    );
    // Another tenant has its own slots.
    const other = l.add(jobData([call('browse', { url: 'c' })], { tenantId: 'other', runId: 'r1' }));
    await t.finish('c');
    expect(outcomeOf(await l.settle(await other)).outcome).toBe('executed');
    await t.finish('a');
    expect(outcomeOf(await l.settle(first)).outcome).toBe('executed');
    const again = l.add(jobData([call('browse', { url: 'b' })], { tenantId: 'acme', runId: 'r3' }));
    await t.finish('b');
    expect(outcomeOf(await l.settle(await again)).outcome).toBe('executed');
  });

  it('parks waiting calls, wakes each when a slot frees (long before its park ends), and runs them in arrival order', async () => {
    const l = await lane();
    const t = gatedTool();
    const cap = defineLimit({ name: 'browsing', per: 'tenant', concurrency: 1, onLimit: 'wait' });
    // A lease of 30 s: a waiting call's park ends within a lease, so one that runs within seconds was woken.
    const { processor } = l.worker(
      { tools: [t.tool], limits: [cap], logger: silent, leaseMs: 30_000, waitJitterMs: 0 },
      { concurrency: 8 },
    );
    const store = new LimitStore({ redis: l.redis, prefix: l.prefix }).caps;
    const first = await l.add(jobData([call('browse', { url: 'a' })], { tenantId: 'acme', runId: 'r0' }));
    await expect.poll(() => t.started, { timeout: 20_000 }).toEqual(['a']);
    const waiting = [];
    for (const [i, url] of ['b', 'c', 'd'].entries()) {
      waiting.push(await l.add(jobData([call('browse', { url })], { tenantId: 'acme', runId: `r${i + 1}` })));
      // Each in line before the next arrives.
      await expect.poll(async () => (await store.usage(cap, { tenantId: 'acme' })).waiting, { timeout: 20_000 }).toBe(i + 1);
    }
    expect(await store.usage(cap, { tenantId: 'acme' })).toMatchObject({ concurrency: 1, held: 1, waiting: 3 });
    const opened = Date.now();
    for (const url of ['a', 'b', 'c', 'd']) await t.finish(url);
    const jobs = await Promise.all([first, ...waiting].map((job) => l.settle(job)));
    expect(jobs.map((job) => outcomeOf(job).outcome)).toEqual(['executed', 'executed', 'executed', 'executed']);
    expect(t.started).toEqual(['a', 'b', 'c', 'd']);
    // Three wake-ups in a row, each far sooner than a park of up to a lease (30 s) would end.
    expect(Date.now() - opened).toBeLessThan(20_000);
    expect(await store.usage(cap, { tenantId: 'acme' })).toMatchObject({ held: 0, waiting: 0 });
    expect(processor.limits?.caps.map((c) => c.name)).toEqual(['browsing']);
  });

  it("a call refused by another cap gives up its place in a waiting cap's line: the next call runs when the slot frees", async () => {
    const l = await lane();
    const t = gatedTool();
    const tenantCap = defineLimit({ name: 'browsing', per: 'tenant', concurrency: 1, onLimit: 'wait' });
    const globalCap = defineLimit({ name: 'provider', per: 'global', concurrency: 1 });
    l.worker({ tools: [t.tool], limits: [tenantCap, globalCap], logger: silent, leaseMs: 30_000, waitJitterMs: 0 }, { concurrency: 4 });
    const store = new LimitStore({ redis: l.redis, prefix: l.prefix }).caps;
    const first = await l.add(jobData([call('browse', { url: 'a' })], { tenantId: 'acme', runId: 'r0' }));
    await expect.poll(() => t.started, { timeout: 20_000 }).toEqual(['a']);
    // Both caps full: the global one refuses, so the call will not come back for its place in the tenant's line.
    const refused = await l.run(jobData([call('browse', { url: 'b' })], { tenantId: 'acme', runId: 'r1' }));
    expect(outcomeOf(refused).content).toMatch(/the in-flight cap "provider"/);
    expect(await store.usage(tenantCap, { tenantId: 'acme' })).toMatchObject({ held: 1, waiting: 0 });
    await t.finish('a');
    await l.settle(first);
    // Nobody ahead of it in line: it runs at once, not after the place would have lapsed (4 leases, 2 min).
    const next = await l.add(jobData([call('browse', { url: 'c' })], { tenantId: 'acme', runId: 'r2' }));
    await t.finish('c');
    expect(outcomeOf(await l.settle(next, 20_000)).outcome).toBe('executed');
  });

  it('a waiting call beside the call holding the slot, in one turn side by side, runs as soon as its sibling frees it', async () => {
    const l = await lane();
    const t = gatedTool();
    const cap = defineLimit({ name: 'browsing', per: 'tenant', concurrency: 1, onLimit: 'wait' });
    // A lease of 30 s: parked until its retry (a lease), the second call would start after ~30 s.
    l.worker({ tools: [t.tool], limits: [cap], logger: silent, leaseMs: 30_000, waitJitterMs: 0 }, { concurrency: 4 });
    const job = await l.add({
      ...jobData([call('browse', { url: 'a' }), call('browse', { url: 'b' })], { tenantId: 'acme' }),
      parallel: true,
    });
    await expect.poll(() => t.started, { timeout: 20_000 }).toEqual(['a']);
    const opened = Date.now();
    await t.finish('a');
    await t.finish('b');
    const done = await l.settle(job, 25_000);
    // Parked once and woken: the first call replays when the job comes back.
    expect((done.returnvalue as ToolJobResult).results.map((r) => r.outcome)).toEqual(['replayed', 'executed']);
    expect(Date.now() - opened).toBeLessThan(20_000);
  });

  it('wakes a call parked on another queue of the same Redis when a slot frees, in both directions', async () => {
    const l = await lane();
    const t = gatedTool();
    const cap = defineLimit({ name: 'browsing', per: 'tenant', concurrency: 1, onLimit: 'wait' });
    const options = { tools: [t.tool], limits: [cap], logger: silent, leaseMs: 30_000, waitJitterMs: 0 };
    l.worker(options, { concurrency: 4 });
    // A second queue, its worker on a connection of its own, sharing the receipts' prefix and so the cap.
    const connections: Redis[] = [];
    const connect = () => {
      const c = new Redis(l.redisUrl, { maxRetriesPerRequest: null });
      connections.push(c);
      return c;
    };
    const other = new Queue('tools-other', { connection: connect(), prefix: l.prefix });
    const otherEvents = new QueueEvents('tools-other', { connection: connect(), prefix: l.prefix });
    const processor = withToolReceipts({ ...options, redis: connect(), prefix: l.prefix });
    const otherWorker = new Worker('tools-other', processor, { connection: connect(), prefix: l.prefix, concurrency: 4 });
    processor.attach(otherWorker);
    otherWorker.on('error', () => undefined);
    try {
      await otherEvents.waitUntilReady();
      const store = new LimitStore({ redis: l.redis, prefix: l.prefix }).caps;
      const inLine = (n: number) =>
        expect.poll(async () => (await store.usage(cap, { tenantId: 'acme' })).waiting, { timeout: 20_000 }).toBe(n);
      const first = await l.add(jobData([call('browse', { url: 'a' })], { tenantId: 'acme', runId: 'r0' }));
      await expect.poll(() => t.started, { timeout: 20_000 }).toEqual(['a']);
      const fromOther = await other.add('call', jobData([call('browse', { url: 'b' })], { tenantId: 'acme', runId: 'r1' }));
      await inLine(1);
      const back = await l.add(jobData([call('browse', { url: 'c' })], { tenantId: 'acme', runId: 'r2' }));
      await inLine(2);
      const opened = Date.now();
      // a's settle (this queue) wakes b (the other); b's wakes c (this one).
      for (const url of ['a', 'b', 'c']) await t.finish(url);
      const settled = [await l.settle(first), await l.settle(back)];
      await fromOther.waitUntilFinished(otherEvents, 30_000);
      const otherDone = (await Job.fromId(other, fromOther.id!))!;
      expect([...settled, otherDone].map((job) => outcomeOf(job).outcome)).toEqual(['executed', 'executed', 'executed']);
      expect(t.started).toEqual(['a', 'b', 'c']);
      // Two wake-ups across queues, each far sooner than a park of up to a lease (30 s) would end.
      expect(Date.now() - opened).toBeLessThan(20_000);
    } finally {
      await otherWorker.close(true);
      await other.close();
      await otherEvents.close();
      for (const c of connections) c.disconnect();
    }
  });

  it('keeps the slot of a call whose outcome is unknown until its lease passes', async () => {
    const l = await lane();
    const unknown = defineTool({
      name: 'browse',
      input: z.object({ url: z.string() }),
      effect: 'opaque',
      destructive: false,
      execute: () => {
        throw new OutcomeUnknownError('the page may have been submitted');
      },
    });
    const cap = defineLimit({ name: 'browsing', per: 'run', concurrency: 1 });
    l.worker({ tools: [unknown], limits: [cap], logger: silent, leaseMs: 1500, onAmbiguous: 'report' });
    const data = jobData([call('browse', { url: 'a' })], { tenantId: 'acme', runId: 'r-unknown' });
    await l.run(data);
    const store = new LimitStore({ redis: l.redis, prefix: l.prefix }).caps;
    const held = await store.usage(cap, data);
    expect(held).toMatchObject({ held: 1 });
    await expect.poll(async () => (await store.usage(cap, data)).held, { timeout: 10_000 }).toBe(0);
    expect((await store.usage(cap, data)).nowMs).toBeGreaterThanOrEqual(held.nextLapseMs!);
  });
});
