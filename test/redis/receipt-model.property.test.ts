/**
 * Model-based test of the receipt store: random sequences of commands from
 * several simulated workers (claims, settles, heartbeats, steps and "outcome
 * unknown" reports with held,
 * stale and guessed fences, operator resolves, and sleeps long enough for
 * leases and whole lifetimes to expire) run against a real Redis and against
 * a reference model of the rules the README states. After every command the
 * fence, the ambiguity and the run-index rules are checked, and the run's
 * counting set against a read of every receipt.
 *
 * Time is the Redis server's: every command runs between two TIME reads, and
 * whatever depends on a deadline that falls inside that window (a lease, a
 * key's expiry) may go either way; the model accepts either outcome and
 * follows the one the store took, while still checking everything else.
 *
 * Reproduce a failure with FC_SEED=<seed> (printed on failure).
 */
import fc from 'fast-check';
import type { Redis } from 'ioredis';
import { receiptKeyOfRunEntry } from '../../src/redis/key-parts.js';
import { describe, expect, it } from 'vitest';
import type { EffectResumability } from '../../src/core/decision.js';
import type { ToolCallReceiptKey } from '../../src/core/identity.js';
import { ContestedReceiptError, FencedOutError, NotAmbiguousError, type AttemptFence } from '../../src/redis/errors.js';
import { isAmbiguousRecord } from '../../src/redis/receipts/reads/record.js';
import type { ReceiptStats } from '../../src/redis/runs/counts.js';
import type { ReceiptStore } from '../../src/redis/receipts/store.js';
import { freshKey, runIndexEntryOf, useRedis } from '../support/redis-fixture.js';

const fixture = useRedis();

const LEASE = 120;
const RETENTION = 150;
const WORKERS = 3;
const CALLS = 2;
/** Deadlines this close to the TIME window count as undecided (PTTL and TIME round to the millisecond). */
const SLACK = 2;
const NUM_RUNS = Number(process.env.FC_RUNS ?? 10);

/** One lifetime of one call's receipt, as the README's rules say it must be. */
interface ModelReceipt {
  status: 'running' | 'completed' | 'failed';
  attempts: number;
  epoch: string;
  effect: EffectResumability;
  leaseUntil: number;
  /** A claim reported the current attempt ambiguous. */
  flagged: boolean;
  /** ambiguous_ms is set (kept after a settle, cleared by a reclaim). */
  ambiguousSet: boolean;
  lateSettleAttempt: number | null;
  createdMs: number;
  /** Bounds of the key's expiry deadline on the server clock. */
  expiresLo: number;
  expiresHi: number;
}

interface HeldFence extends AttemptFence {
  readonly call: number;
}

interface Model {
  receipts: (ModelReceipt | null)[];
  fences: HeldFence[];
}

interface Real {
  redis: Redis;
  stores: ReceiptStore[];
  keys: ToolCallReceiptKey[];
}

type Tri = true | false | 'either';

const nowOf = async (redis: Redis): Promise<number> => {
  const [s, us] = await redis.time();
  return Number(s) * 1000 + Math.floor(Number(us) / 1000);
};

/** Whether `deadline` (in [lo, hi]) has passed at some instant of [t0, t1]. */
function passed(lo: number, hi: number, t0: number, t1: number): Tri {
  if (hi + SLACK < t0) return true;
  if (lo - SLACK > t1) return false;
  return 'either';
}

const choices = (t: Tri): boolean[] => (t === 'either' ? [true, false] : [t]);

/** One possible state of a call at the moment a command ran: does it exist, is its lease over. */
interface World {
  readonly receipt: ModelReceipt | null;
  readonly leaseExpired: boolean;
}

function worlds(r: ModelReceipt | null, t0: number, t1: number): World[] {
  if (r === null) return [{ receipt: null, leaseExpired: false }];
  const out: World[] = [];
  // The receipt still there comes first: where both worlds predict the same (a fenced-out write), picking
  // "gone" would drop a receipt that exists; the next check learns soon enough if it really expired.
  for (const gone of choices(passed(r.expiresLo, r.expiresHi, t0, t1)).reverse()) {
    if (gone) {
      out.push({ receipt: null, leaseExpired: false });
      continue;
    }
    const expiry = r.status === 'running' ? choices(passed(r.leaseUntil, r.leaseUntil, t0, t1)) : [false];
    for (const leaseExpired of expiry) out.push({ receipt: r, leaseExpired });
  }
  return out;
}

const holds = (r: ModelReceipt | null, f: AttemptFence) =>
  r !== null && r.status === 'running' && r.attempts === f.attempt && r.epoch === f.epoch;

/** Runs `act` between two TIME reads; returns its outcome (or error) and the window. */
async function timed<T>(real: Real, act: () => Promise<T>): Promise<{ t0: number; t1: number; value?: T; error?: unknown }> {
  const t0 = await nowOf(real.redis);
  try {
    const value = await act();
    return { t0, t1: await nowOf(real.redis), value };
  } catch (error) {
    return { t0, t1: await nowOf(real.redis), error };
  }
}

/** The one world whose prediction matches; fails the run when none does. */
function pick<T>(ws: World[], predict: (w: World) => T | null, matches: (p: T) => boolean, what: string): { world: World; p: T } {
  for (const world of ws) {
    const p = predict(world);
    if (p !== null && matches(p)) return { world, p };
  }
  throw new Error(
    `${what}: no world of the model allows what the store did (worlds: ${JSON.stringify(ws.map((w) => ({ exists: w.receipt !== null, leaseExpired: w.leaseExpired, status: w.receipt?.status, attempts: w.receipt?.attempts, flagged: w.receipt?.flagged })))})`,
  );
}

class ClaimCommand implements fc.AsyncCommand<Model, Real> {
  constructor(
    readonly worker: number,
    readonly call: number,
    readonly effect: EffectResumability,
  ) {}
  check = () => true;
  async run(m: Model, real: Real) {
    const r = m.receipts[this.call]!;
    const {
      t0,
      t1,
      value: claim,
      error,
    } = await timed(real, () => real.stores[this.worker]!.claim(real.keys[this.call]!, { effect: this.effect, leaseMs: LEASE }));
    if (error) throw error;
    const got = claim!.decision.kind === 'execute' ? `execute@${claim!.decision.attempt}` : claim!.decision.kind;
    const { world } = pick(
      worlds(r, t0, t1),
      (w) => {
        const s = w.receipt;
        if (s === null) return 'execute@1';
        if (s.status === 'completed') return 'replay';
        if (s.status === 'failed') return `execute@${s.attempts + 1}`;
        if (s.flagged) return 'ambiguous';
        if (!w.leaseExpired) return 'wait';
        return s.effect === 'resumable' && this.effect === 'resumable' ? `execute@${s.attempts + 1}` : 'ambiguous';
      },
      (p) => p === got,
      `${this} got ${got}`,
    );
    const s = world.receipt;
    if (claim!.decision.kind === 'execute') {
      const fence = claim!.fence!;
      expect(fence.attempt).toBe(claim!.decision.attempt);
      const leaseUntil = claim!.leaseUntilMs!;
      const now = leaseUntil - LEASE;
      if (s === null) {
        // A new lifetime: a fresh epoch, never one seen before.
        expect(m.fences.some((f) => f.epoch === fence.epoch)).toBe(false);
        m.receipts[this.call] = {
          status: 'running',
          attempts: 1,
          epoch: fence.epoch,
          effect: this.effect,
          leaseUntil,
          flagged: false,
          ambiguousSet: false,
          lateSettleAttempt: null,
          createdMs: now,
          expiresLo: now + LEASE + RETENTION,
          expiresHi: now + LEASE + RETENTION,
        };
      } else {
        expect(fence.epoch).toBe(s.epoch);
        Object.assign(s, {
          status: 'running',
          attempts: fence.attempt,
          leaseUntil,
          flagged: false,
          ambiguousSet: false,
          expiresLo: Math.max(s.expiresLo, leaseUntil + RETENTION),
          expiresHi: Math.max(s.expiresHi, leaseUntil + RETENTION),
        });
      }
      m.fences.push({ ...fence, call: this.call });
    } else if (claim!.decision.kind === 'ambiguous' && s !== null) {
      s.flagged = true;
      s.ambiguousSet = true;
      s.expiresLo = Math.max(s.expiresLo, t0 + RETENTION);
      s.expiresHi = Math.max(s.expiresHi, t1 + RETENTION);
    } else if (s === null) {
      m.receipts[this.call] = null;
    }
    if (s === null && claim!.decision.kind !== 'execute') m.receipts[this.call] = null;
    await checkInvariants(m, real);
  }
  toString = () => `claim(w${this.worker}, call${this.call}, ${this.effect})`;
}

type FenceChoice = { kind: 'held'; index: number } | { kind: 'guess'; call: number; attempt: number; epochFrom: number | null };

function fenceFor(m: Model, choice: FenceChoice): HeldFence {
  if (choice.kind === 'held' && m.fences.length > 0) return m.fences[choice.index % m.fences.length]!;
  const call = choice.kind === 'guess' ? choice.call : 0;
  const attempt = choice.kind === 'guess' ? choice.attempt : 1;
  const from =
    choice.kind === 'guess' && choice.epochFrom !== null && m.fences.length > 0 ? m.fences[choice.epochFrom % m.fences.length]! : null;
  return { call, attempt, epoch: from?.epoch ?? 'guessed-epoch' };
}

type FencedOp = 'complete' | 'fail' | 'heartbeat' | 'step' | 'unknown';

class FencedCommand implements fc.AsyncCommand<Model, Real> {
  constructor(
    readonly op: FencedOp,
    readonly worker: number,
    readonly choice: FenceChoice,
  ) {}
  check = () => true;
  async run(m: Model, real: Real) {
    const fence = fenceFor(m, this.choice);
    const store = real.stores[this.worker]!;
    const key = real.keys[fence.call]!;
    const { t0, t1, value, error } = await timed(real, async () => {
      switch (this.op) {
        case 'complete':
          return { settle: await store.complete(key, fence, `by ${fence.epoch}@${fence.attempt}`) };
        case 'fail':
          return { settle: await store.fail(key, fence, { error: 'failed' }) };
        case 'heartbeat':
          return { beat: await store.heartbeat(key, fence, LEASE) };
        case 'step':
          return { step: await store.recordStep(key, fence, 's', fence.attempt) };
        case 'unknown':
          return { unknown: await store.markOutcomeUnknown(key, fence, 'outcome unknown') };
      }
    });
    if (error !== undefined && !(error instanceof FencedOutError)) throw error;
    const ok = error === undefined;
    const { world } = pick(
      worlds(m.receipts[fence.call]!, t0, t1),
      (w) => holds(w.receipt, fence),
      (p) => p === ok,
      `${this} (fence ${JSON.stringify(fence)}) ${ok ? 'succeeded' : 'was fenced out'}`,
    );
    const s = world.receipt;
    if (s === null) m.receipts[fence.call] = null;
    if (ok && s !== null) {
      if (this.op === 'complete' || this.op === 'fail') {
        const settle = value!.settle!;
        // A settle is late exactly when a claim had reported the attempt ambiguous.
        expect(settle.late !== null, `${this} late`).toBe(s.flagged);
        if (s.flagged) s.lateSettleAttempt = s.attempts;
        s.status = this.op === 'complete' ? 'completed' : 'failed';
        s.flagged = false;
        s.expiresLo = s.expiresHi = settle.settledMs + RETENTION;
      } else if (this.op === 'heartbeat') {
        const beat = value!.beat!;
        expect(beat.contested, `${this} contested`).toBe(s.flagged);
        s.leaseUntil = beat.leaseUntilMs;
        s.expiresLo = Math.max(s.expiresLo, beat.leaseUntilMs + RETENTION);
        s.expiresHi = Math.max(s.expiresHi, beat.leaseUntilMs + RETENTION);
      } else if (this.op === 'unknown') {
        // As a crash would leave it: the lease ends now; an opaque receipt is flagged at once.
        if (s.effect !== 'resumable') s.flagged = s.ambiguousSet = true;
        expect(value!.unknown!.ambiguousMs !== null, `${this} flagged`).toBe(s.ambiguousSet);
        s.leaseUntil = t1;
        s.expiresLo = Math.max(s.expiresLo, t0 + RETENTION);
        s.expiresHi = Math.max(s.expiresHi, t1 + RETENTION);
      } else {
        s.expiresLo = Math.max(s.expiresLo, Math.max(s.leaseUntil, t0) + RETENTION);
        s.expiresHi = Math.max(s.expiresHi, Math.max(s.leaseUntil, t1) + RETENTION);
      }
    }
    await checkInvariants(m, real);
  }
  toString = () => `${this.op}(w${this.worker}, ${JSON.stringify(this.choice)})`;
}

class ResolveCommand implements fc.AsyncCommand<Model, Real> {
  constructor(
    readonly call: number,
    readonly attemptsDelta: number,
    readonly withEpoch: 'current' | 'none' | 'stale',
    readonly outcome: 'completed' | 'failed',
  ) {}
  check = () => true;
  async run(m: Model, real: Real) {
    const r = m.receipts[this.call]!;
    const attemptsSeen = Math.max(1, (r?.attempts ?? 1) + this.attemptsDelta);
    const epochSeen = this.withEpoch === 'none' ? undefined : this.withEpoch === 'stale' ? 'an-older-lifetime' : r?.epoch || 'unknown';
    const key = real.keys[this.call]!;
    const resolution =
      this.outcome === 'completed'
        ? { attemptsSeen, ...(epochSeen === undefined ? {} : { epochSeen }), outcome: 'completed' as const, result: 'operator' }
        : { attemptsSeen, ...(epochSeen === undefined ? {} : { epochSeen }), outcome: 'failed' as const, error: 'operator' };
    const { t0, t1, error } = await timed(real, () => real.stores[0]!.resolve(key, resolution));
    if (
      error !== undefined &&
      !(error instanceof FencedOutError) &&
      !(error instanceof NotAmbiguousError) &&
      !(error instanceof ContestedReceiptError)
    )
      throw error;
    const got =
      error === undefined
        ? 'resolved'
        : error instanceof NotAmbiguousError
          ? 'notAmbiguous'
          : error instanceof ContestedReceiptError
            ? 'contested'
            : 'fenced';
    const { world } = pick(
      worlds(r, t0, t1),
      (w) => {
        const s = w.receipt;
        if (s === null || !holds(s, { attempt: attemptsSeen, epoch: epochSeen ?? s.epoch })) return 'fenced';
        if (!w.leaseExpired) return s.flagged ? 'contested' : 'notAmbiguous';
        return s.flagged || s.effect === 'opaque' ? 'resolved' : 'notAmbiguous';
      },
      (p) => p === got,
      `${this} (seen ${attemptsSeen}/${epochSeen}) got ${got}`,
    );
    const s = world.receipt;
    if (s === null) m.receipts[this.call] = null;
    if (got === 'resolved' && s !== null) {
      s.status = this.outcome;
      s.flagged = false;
      s.expiresLo = t0 + RETENTION;
      s.expiresHi = t1 + RETENTION;
    }
    await checkInvariants(m, real);
  }
  toString = () =>
    `resolve(call${this.call}, ${this.attemptsDelta >= 0 ? '+' : ''}${this.attemptsDelta}, ${this.withEpoch}, ${this.outcome})`;
}

class ListRunCommand implements fc.AsyncCommand<Model, Real> {
  check = () => true;
  async run(m: Model, real: Real) {
    await checkInvariants(m, real, true);
  }
  toString = () => 'listRun()';
}

class SleepCommand implements fc.AsyncCommand<Model, Real> {
  constructor(readonly ms: number) {}
  check = () => true;
  async run(m: Model, real: Real) {
    await new Promise((r) => setTimeout(r, this.ms));
    await checkInvariants(m, real);
  }
  toString = () => `sleep(${this.ms})`;
}

/**
 * The rules, checked on what the store reads back: every call the model
 * knows to exist has the model's status, attempts, epoch, flag and late
 * settle; a flagged running receipt is listed ambiguous; the run index
 * scores every live receipt by created_ms of its current lifetime (read
 * before anything lists it, since listing repairs stale entries); and, when
 * asked, listRun lists the live receipts oldest first that way.
 */
async function checkInvariants(m: Model, real: Real, withListing = false): Promise<void> {
  const index = real.stores[0]!.runIndexKey(real.keys[0]!.tenantId, real.keys[0]!.runId);
  const t0 = await nowOf(real.redis);
  // Read before listRun, which repairs what it finds: the transitions alone must keep the scores right.
  const scoresBefore = await Promise.all(
    real.keys.map(async (k) => real.redis.zscore(index, await runIndexEntryOf(real.redis, real.stores[0]!, k))),
  );
  const records = await Promise.all(real.keys.map((k) => real.stores[0]!.inspect(k)));
  const listed = withListing ? await real.stores[0]!.listRun(real.keys[0]!.tenantId, real.keys[0]!.runId) : [];
  const t1 = await nowOf(real.redis);
  const live: string[] = [];
  records.forEach((record, call) => {
    const s = m.receipts[call]!;
    const gone = s === null ? true : passed(s.expiresLo, s.expiresHi, t0, t1);
    if (record === null) {
      expect(gone, `call${call} vanished while the model keeps it`).not.toBe(false);
      m.receipts[call] = null;
      return;
    }
    expect(s, `call${call} exists though the model has none`).not.toBeNull();
    expect(gone, `call${call} outlived its expiry`).not.toBe(true);
    live.push(record.redisKey);
    expect(
      {
        status: record.status,
        attempts: record.attempts,
        epoch: record.epoch,
        ambiguousSet: record.ambiguousMs !== null,
        late: record.lateSettle?.attempt ?? null,
        createdMs: record.createdMs,
      },
      `call${call}`,
    ).toEqual({
      status: s!.status,
      attempts: s!.attempts,
      epoch: s!.epoch,
      ambiguousSet: s!.ambiguousSet,
      late: s!.lateSettleAttempt,
      createdMs: s!.createdMs,
    });
    if (s!.flagged) expect(isAmbiguousRecord(record), `call${call} flagged but not listed ambiguous`).toBe(true);
    expect(Number(scoresBefore[call]), `call${call}: index score is created_ms of the current lifetime`).toBe(s!.createdMs);
  });
  // The index: oldest first by the current lifetime's created_ms, every listed receipt live.
  const created = listed.map((r) => r.createdMs);
  expect(created).toEqual([...created].sort((a, b) => a - b));
  for (const r of listed) {
    const call = real.keys.findIndex((k) => real.stores[0]!.redisKey(k) === r.redisKey);
    const s = m.receipts[call];
    if (s) expect(r.createdMs).toBe(s.createdMs);
  }
  const scores = await real.redis.zrange(index, 0, -1, 'WITHSCORES');
  for (let i = 0; i < scores.length; i += 2) {
    const r = listed.find((x) => x.redisKey === receiptKeyOfRunEntry(index, scores[i]!));
    if (r) expect(Number(scores[i + 1]), 'index score').toBe(r.createdMs);
  }
  await expectCountsAsScanned(real.stores[0]!, real.keys[0]!.tenantId);
}

/**
 * The run's counting set says what reading every receipt says: the counts
 * stats() takes from it equal the SCAN tally. Compared between two fast reads
 * that agree, so no lease lapse falls between the reads compared. A counted
 * expiry is the script's TIME in whole milliseconds plus the TTL, while Redis
 * expires the key from its own clock a fraction of a millisecond later, so
 * right at that edge the two may disagree for a millisecond or two: a
 * disagreement counts only when it outlasts a few milliseconds.
 */
async function expectCountsAsScanned(store: ReceiptStore, tenantId: string): Promise<void> {
  const summary = (s: ReceiptStats) => ({
    pairs: s.byStatusAndEffect.map((c) => `${c.status}/${c.effect}=${c.count}`).sort(),
    ambiguous: s.ambiguous,
    oldest: s.oldestAmbiguousSinceMs,
  });
  let disagreements = 0;
  for (let tries = 0; tries < 10; tries++) {
    const before = summary(await store.stats({ tenantId }));
    const scanned = summary(await store.stats({ tenantId, scan: true }));
    const after = summary(await store.stats({ tenantId }));
    if (JSON.stringify(before) !== JSON.stringify(after)) continue;
    if (JSON.stringify(scanned) === JSON.stringify(before)) return;
    // Two more looks, 3 ms apart: an edge has passed by then, a wrong count has not.
    if (++disagreements > 2) expect(scanned, 'counting set against the receipts').toEqual(before);
    await new Promise((r) => setTimeout(r, 3));
  }
  throw new Error('the counts changed under every read');
}

const worker = fc.nat({ max: WORKERS - 1 });
const callIndex = fc.nat({ max: CALLS - 1 });
const fenceChoice: fc.Arbitrary<FenceChoice> = fc.oneof(
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('held' as const), index: fc.nat() }) },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('guess' as const),
      call: callIndex,
      attempt: fc.integer({ min: 1, max: 3 }),
      epochFrom: fc.option(fc.nat(), { nil: null }),
    }),
  },
);
const commands = [
  fc.tuple(worker, callIndex, fc.constantFrom<EffectResumability>('resumable', 'opaque')).map(([w, c, e]) => new ClaimCommand(w, c, e)),
  fc
    .tuple(fc.constantFrom<FencedOp>('complete', 'fail', 'heartbeat', 'step', 'unknown'), worker, fenceChoice)
    .map(([op, w, f]) => new FencedCommand(op, w, f)),
  fc
    .tuple(
      callIndex,
      fc.integer({ min: -1, max: 1 }),
      fc.constantFrom('current', 'none', 'stale') as fc.Arbitrary<'current' | 'none' | 'stale'>,
      fc.constantFrom('completed', 'failed') as fc.Arbitrary<'completed' | 'failed'>,
    )
    .map(([c, d, e, o]) => new ResolveCommand(c, d, e, o)),
  fc.constantFrom(LEASE / 2, LEASE + 30, LEASE + RETENTION + 40).map((ms) => new SleepCommand(ms)),
  fc.constant(new ListRunCommand()),
];

describe('receipt store against a model of its rules', () => {
  it('holds the fence, ambiguity and run-index rules under random commands from several workers', async () => {
    const seed = Number(process.env.FC_SEED ?? Math.floor(Math.random() * 2 ** 31));
    const redis = fixture.connect();
    try {
      await fc.assert(
        fc.asyncProperty(fc.commands(commands, { maxCommands: 40, size: 'max' }), async (cmds) => {
          const base = freshKey();
          const keys = Array.from({ length: CALLS }, (_, i) => ({ ...base, argsHash: `${base.argsHash}-${i}` }));
          const stores = Array.from({ length: WORKERS }, (_, i) =>
            fixture.store({ leaseMs: LEASE, retentionMs: RETENTION, owner: `w${i}` }),
          );
          await fc.asyncModelRun(() => ({ model: { receipts: keys.map(() => null), fences: [] }, real: { redis, stores, keys } }), cmds);
        }),
        { numRuns: NUM_RUNS, seed, endOnFailure: true },
      );
    } catch (error) {
      throw new Error(`model-based receipt test failed; reproduce with FC_SEED=${seed}\n${(error as Error).message}`, { cause: error });
    }
  }, 120_000);
});
