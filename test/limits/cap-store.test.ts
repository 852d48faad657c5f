/**
 * An in-flight cap's slots through the store, on a real Redis and its clock:
 * acquire up to k, a delivery's renew and release of its own slot only, a
 * slot shared by two deliveries of one call and adopted by the one that
 * executes, a lapsed lease freeing its slot (and a renew then failing),
 * waiting calls admitted in arrival order and the release naming the jobs
 * to wake (a takeover that finds the cap full at its execution included),
 * a refusal taking no place, and the operator's read; and a delivery's
 * slots against its own clock (a claim that came late asks again, a late
 * renewal stops the tool at once), a stale delivery leaving the place its
 * job's next delivery keeps, and the jobs woken by slots freed on the way
 * to an error or after a claim that does not execute.
 */
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { performance } from 'node:perf_hooks';
import { CapStore, defineLimit, HeldSlots, LimitStore, type SlotRequest } from '../../src/limits/index.js';
import { useRedis, waitUntil } from '../support/redis-fixture.js';

const fixture = useRedis();

function capStore(): CapStore {
  return new LimitStore({ redis: fixture.client(), prefix: fixture.handle().prefix }).caps;
}

/** A fresh tenant's cap of `k` and a request maker for its calls. */
function cap(k: number, onLimit: 'wait' | 'refuse' = 'wait') {
  const store = capStore();
  const definition = defineLimit({ name: 'browse', per: 'tenant', concurrency: k, onLimit });
  const tenantId = `t-${randomBytes(4).toString('hex')}`;
  const keys = store.keysOf(definition, { tenantId });
  const request = (call: string, token = `token-${call}`): SlotRequest => ({ cap: definition, keys, receiptKey: `receipt-${call}`, token });
  const acquire = (call: string, options: { token?: string; leaseMs?: number; adopt?: boolean } = {}) =>
    store.acquire(request(call, options.token), {
      leaseMs: options.leaseMs ?? 60_000,
      placeMs: 60_000,
      waker: `job-${call}`,
      adopt: options.adopt ?? false,
    });
  return { store, definition, tenantId, request, acquire };
}

describe('an in-flight cap through the store', () => {
  it('grants k slots, parks the rest in arrival order, and a release frees a slot and names the first in line to wake', async () => {
    const { store, definition, tenantId, request, acquire } = cap(2);
    expect(await acquire('a')).toMatchObject({ kind: 'granted', held: 1 });
    expect(await acquire('b')).toMatchObject({ kind: 'granted', held: 2 });
    expect(await acquire('c')).toMatchObject({ kind: 'full', position: 0 });
    expect(await acquire('d')).toMatchObject({ kind: 'full', position: 1 });
    expect(await store.usage(definition, { tenantId })).toMatchObject({ concurrency: 2, held: 2, waiting: 2 });

    // Another delivery's token frees nothing.
    expect(await store.release(request('a', 'someone-else'))).toEqual({ released: false, wake: [] });
    expect(await store.release(request('a'))).toEqual({ released: true, wake: ['job-c'] });
    // d is behind c: the free slot is c's until c comes back for it.
    expect(await acquire('d')).toMatchObject({ kind: 'full', position: 1 });
    expect(await acquire('c')).toMatchObject({ kind: 'granted', held: 2 });
    expect(await store.release(request('b'))).toEqual({ released: true, wake: ['job-d'] });
    expect(await acquire('d')).toMatchObject({ kind: 'granted' });
    expect(await store.usage(definition, { tenantId })).toMatchObject({ held: 2, waiting: 0 });
  });

  it('tells a call behind one that was woken for a free slot to ask again in a lease, not at once', async () => {
    const { store, request, acquire } = cap(1);
    expect(await acquire('a')).toMatchObject({ kind: 'granted' });
    expect(await acquire('b')).toMatchObject({ kind: 'full', position: 0 });
    expect(await store.release(request('a'))).toEqual({ released: true, wake: ['job-b'] });
    // The slot is free and kept for b, which has not come back yet: no holder to wait for.
    const c = await acquire('c', { leaseMs: 60_000 });
    expect(c).toMatchObject({ kind: 'full', held: 0, position: 1 });
    if (c.kind !== 'full') return;
    expect(c.retryAtMs - c.nowMs).toBe(60_000);
  });

  it('lets one call hold one slot: a second delivery shares it, and adopts it when it executes', async () => {
    const { request, acquire, store } = cap(1);
    expect(await acquire('a', { token: 'first' })).toMatchObject({ kind: 'granted' });
    expect(await acquire('a', { token: 'second' })).toMatchObject({ kind: 'shared', held: 1 });
    expect(await acquire('a', { token: 'first' })).toMatchObject({ kind: 'granted', held: 1 });
    expect(await acquire('a', { token: 'second', adopt: true })).toMatchObject({ kind: 'granted', held: 1 });
    // The first delivery holds it no more: its renew fails, and its release frees nothing.
    expect(await store.renew(request('a', 'first'), 60_000)).toBe(false);
    expect(await store.release(request('a', 'first'))).toMatchObject({ released: false });
    expect(await store.renew(request('a', 'second'), 60_000)).toBe(true);
    expect(await acquire('b')).toMatchObject({ kind: 'full', position: 0 });
  });

  it('frees a slot whose lease passed on the server clock, never sooner, and its renew then fails', async () => {
    const { request, acquire, store, definition, tenantId } = cap(1);
    const granted = await acquire('a', { leaseMs: 600 });
    expect(granted).toMatchObject({ kind: 'granted' });
    const full = await acquire('b');
    if (full.kind !== 'full') throw new Error(`expected no slot, got ${JSON.stringify(full)}`);
    expect(full.retryAtMs).toBe((granted as { deadlineMs: number }).deadlineMs);
    const freed = await waitUntil(
      () => acquire('b'),
      (answer) => answer.kind === 'granted',
      10_000,
      "a's lease to pass",
    );
    expect(freed.nowMs).toBeGreaterThanOrEqual((granted as { deadlineMs: number }).deadlineMs);
    expect(await store.renew(request('a'), 600)).toBe(false);
    expect(await store.usage(definition, { tenantId })).toMatchObject({ held: 1, waiting: 0 });
  });

  it('with refuse, takes no place in line; a renewed slot outlives its first lease', async () => {
    const { acquire, store, request } = cap(1, 'refuse');
    expect(await acquire('a', { leaseMs: 800 })).toMatchObject({ kind: 'granted' });
    expect(await acquire('b')).toMatchObject({ kind: 'full', position: -1 });
    for (let i = 0; i < 5; i++) {
      await new Promise((r) => setTimeout(r, 300));
      expect(await store.renew(request('a'), 800)).toBe(true);
    }
    expect(await acquire('b')).toMatchObject({ kind: 'full', position: -1 });
    expect(await store.release(request('a'))).toEqual({ released: true, wake: [] });
    expect(await acquire('b')).toMatchObject({ kind: 'granted' });
  });

  it.each([
    ['with no place yet', false],
    ['after its gate kept it a place', true],
  ] as const)(
    'an attempt that executes and finds the cap full (%s) keeps its place under its job, and the release that frees a slot wakes it',
    async (_, placedAtGate) => {
      const { request, acquire, store } = cap(1);
      const limits = new LimitStore({ redis: fixture.client(), prefix: fixture.handle().prefix });
      expect(await acquire('a')).toMatchObject({ kind: 'granted' });
      // Call b's gate went on to its claim (its receipt was running), and the claim took the attempt over.
      if (placedAtGate) expect(await acquire('b')).toMatchObject({ kind: 'full', position: 0 });
      const slot = { request: request('b'), own: false, placed: placedAtGate };
      const held = new HeldSlots(limits, 'receipt-b', [slot], { leaseMs: 60_000, waker: 'job-b' }, performance.now());
      expect(await held.afterClaim(true)).toMatchObject({ run: false, refusal: { onLimit: 'wait' }, wake: [] });
      expect(await store.release(request('a'))).toEqual({ released: true, wake: ['job-b'] });
      expect(await acquire('b')).toMatchObject({ kind: 'granted' });
    },
  );
});

describe("a delivery's slots against its own clock", () => {
  const limits = () => new LimitStore({ redis: fixture.client(), prefix: fixture.handle().prefix });
  /** A delivery's one slot, `request`'s, held since `askedAtMs` (this process's clock), for the job `waker`. */
  const ownSlot = (request: SlotRequest, leaseMs: number, waker: string, askedAtMs: number) =>
    new HeldSlots(limits(), request.receiptKey, [{ request, own: true, placed: false }], { leaseMs, waker }, askedAtMs);

  it('does not start a tool on a slot that lapsed between its gate and its claim: the claim asks for it again', async () => {
    const { request, acquire, store, definition, tenantId } = cap(1);
    const askedAtMs = performance.now();
    expect(await acquire('a', { leaseMs: 600 })).toMatchObject({ kind: 'granted' });
    const held = ownSlot(request('a'), 600, 'job-a', askedAtMs);
    // A slow claim: the lease passes on the server, and another call takes the slot.
    await waitUntil(
      () => acquire('x'),
      (answer) => answer.kind === 'granted',
      10_000,
      "a's lease to pass",
    );
    expect(await held.afterClaim(true)).toMatchObject({ run: false, refusal: { onLimit: 'wait', limit: 'browse' } });
    // Not run, and in line for the slot x holds: x's release wakes its job.
    expect(await store.usage(definition, { tenantId })).toMatchObject({ held: 1, waiting: 1 });
    expect(await store.release(request('x'))).toEqual({ released: true, wake: ['job-a'] });
  });

  it('renews a slot it still holds when its claim came late, and runs', async () => {
    const { request, acquire, store, definition, tenantId } = cap(1);
    const leaseMs = 3_000;
    // Asked for half a lease ago: the first renewal, a third of a lease after the tool starts, would come late.
    const askedAtMs = performance.now() - leaseMs / 2;
    const granted = await acquire('a', { leaseMs });
    const held = ownSlot(request('a'), leaseMs, 'job-a', askedAtMs);
    expect(await held.afterClaim(true)).toEqual({ run: true });
    const renewed = await acquire('b');
    if (renewed.kind !== 'full' || granted.kind !== 'granted') throw new Error(`expected a held slot, got ${JSON.stringify(renewed)}`);
    // The slot's deadline moved on: the claim's acquire renewed it.
    expect(renewed.retryAtMs).toBeGreaterThan(granted.deadlineMs);
    // Counted from the renewal, the first renewal is on time.
    expect(await held.renew()).toBe(true);
    expect(await store.usage(definition, { tenantId })).toMatchObject({ held: 1 });
  });

  it('asks its tool to stop at once when a renewal is sent late, without waiting for the reply, and renews all the same', async () => {
    const { request, acquire, store } = cap(1);
    const leaseMs = 3_000;
    const askedAtMs = performance.now();
    const granted = await acquire('a', { leaseMs });
    // Renewals failed until less than a third of the lease is surely left (by this process's clock).
    const held = ownSlot(request('a'), leaseMs, 'job-a', askedAtMs - (3 * leaseMs) / 4);
    // The answer is there before any reply: a server out of reach would answer only at the command's deadline.
    expect(held.renew()).toBe(false);
    const later = await waitUntil(
      () => acquire('b'),
      (answer) => answer.kind === 'full' && granted.kind === 'granted' && answer.retryAtMs > granted.deadlineMs,
      10_000,
      'the renewal to land',
    );
    expect(later).toMatchObject({ kind: 'full' });
    expect(await store.release(request('a'))).toMatchObject({ released: true });
  });

  it.each([
    ['on the way to an error', true],
    ['after a claim that does not execute (a replay, a wait)', false],
  ] as const)('wakes the jobs first in line for a slot it frees %s', async (_, executes) => {
    const store = capStore();
    const tenantId = `t-${randomBytes(4).toString('hex')}`;
    const browsing = defineLimit({ name: 'browsing', per: 'tenant', concurrency: 1, onLimit: 'wait' });
    const fetching = defineLimit({ name: 'fetching', per: 'tenant', concurrency: 1 });
    const requestOf = (cap: typeof browsing, call: string): SlotRequest => ({
      cap,
      keys: store.keysOf(cap, { tenantId }),
      receiptKey: `receipt-${call}`,
      token: call,
    });
    const slotOptions = (call: string) => ({ leaseMs: 60_000, placeMs: 60_000, waker: `job-${call}`, adopt: false });
    // Call c holds the one browsing slot; w waits in its line; c has yet to take its fetching slot.
    expect(await store.acquire(requestOf(browsing, 'c'), slotOptions('c'))).toMatchObject({ kind: 'granted' });
    expect(await store.acquire(requestOf(browsing, 'w'), slotOptions('w'))).toMatchObject({ kind: 'full' });
    const woken: string[] = [];
    const held = new HeldSlots(
      new LimitStore({ redis: fixture.client(), prefix: fixture.handle().prefix }),
      'receipt-c',
      [
        { request: requestOf(browsing, 'c'), own: true, placed: false },
        { request: requestOf(fetching, 'c'), own: false, placed: false },
      ],
      { leaseMs: 60_000, waker: 'job-c', wake: async (jobs) => void woken.push(...jobs) },
      performance.now(),
    );
    if (executes) {
      // The fetching cap's holders key is not a sorted set: c's adoption after its claim fails.
      await fixture.connect().set(store.keysOf(fetching, { tenantId }).held, 'not a sorted set');
      await expect(held.afterClaim(true)).rejects.toMatchObject({ code: 'receipt.corrupt' });
    } else {
      expect(await held.afterClaim(false)).toEqual({ run: true });
    }
    // The browsing slot was freed on the way, and w, first in line, was woken.
    expect(woken).toEqual(['job-w']);
  });

  it('leaves alone the place in line a later delivery of its job keeps, when it frees the slot that lapsed under it', async () => {
    const { request, acquire, store, definition, tenantId } = cap(1);
    // Delivery 1 of job-b holds the slot, and stalls past its lease; x takes the slot.
    const first = ownSlot(request('b', 'delivery-1'), 600, 'job-b', performance.now());
    expect(await acquire('b', { token: 'delivery-1', leaseMs: 600 })).toMatchObject({ kind: 'granted' });
    await waitUntil(
      () => acquire('x'),
      (answer) => answer.kind === 'granted',
      10_000,
      "the first delivery's lease to pass",
    );
    // The job comes back (delivery 2): the cap is full, so it keeps a place in line and parks.
    expect(await acquire('b', { token: 'delivery-2' })).toMatchObject({ kind: 'full', position: 0 });
    // Delivery 1 wakes up and ends: it frees what it holds (nothing now), and gives up no place it did not keep.
    expect(await first.release()).toEqual([]);
    expect(await store.usage(definition, { tenantId })).toMatchObject({ held: 1, waiting: 1 });
    expect(await store.release(request('x'))).toEqual({ released: true, wake: ['job-b'] });
  });
});
