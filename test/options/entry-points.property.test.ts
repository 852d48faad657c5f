/**
 * Every option of every entry point, with random values: either the entry
 * point refuses them where they are given, with `options.invalid` naming an
 * option that is wrong (or `redis.invalid_connection` for a wrong `redis`),
 * or every value was usable and what was made works: a processor runs a job
 * against real Redis, a store makes a call, the doctor reports.
 *
 * Whether a value is usable is decided here by an oracle written from the
 * documented contract of each option, not by the library's schema; each
 * table is typed by the options interface, so an option added to the
 * interface and not here does not compile, and the schemas' key lists are
 * held equal to the interfaces'.
 */
import fc from 'fast-check';
import { Queue, QueueEvents } from 'bullmq';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, expectTypeOf, it } from 'vitest';
import { z } from 'zod';
import { ToolReceiptsError } from '../../src/core/errors.js';
import { hmacSha256Digest, sha256Digest } from '../../src/core/identity.js';
import {
  defineTool,
  NOOP_OBSERVER,
  reconcileAmbiguous,
  ToolReceiptsEvents,
  withToolReceipts,
  type ReconcileSweepOptions,
  type ToolReceiptsOptions,
} from '../../src/bullmq/index.js';
import { TOOL_RECEIPTS_SCHEMA, RECONCILE_SWEEP_SCHEMA } from '../../src/bullmq/options.js';
import { createToolCallClient, type ToolCallClientOptions } from '../../src/client/index.js';
import { TOOL_CALL_CLIENT_SCHEMA } from '../../src/client/options.js';
import { BreakerStore, ReceiptStore, checkRedisForReceipts, type DurabilityOptions } from '../../src/redis/index.js';
import { hasWaitAof } from '../../src/redis/durability/durability.js';
import { BREAKER_STORE_SCHEMA, type BreakerStoreOptions } from '../../src/redis/receipts/transitions/breaker-store.js';
import { RECEIPT_STORE_SCHEMA, type ReceiptStoreOptions } from '../../src/redis/receipts/store.js';
import {
  RECONCILE_STORE_SCHEMA,
  ReconcileStore,
  type ReconcileStoreOptions,
} from '../../src/redis/receipts/transitions/reconcile-store.js';
import { CHECK_REDIS_SCHEMA, type CheckRedisOptions } from '../../src/redis/operators/doctor.js';
import {
  InMemoryToolResultStore,
  RedisToolResultStore,
  type InMemoryToolResultStoreOptions,
  type RedisToolResultStoreOptions,
} from '../../src/offload/index.js';
import { REDIS_TOOL_RESULT_STORE_SCHEMA } from '../../src/offload/redis-store.js';
import { IN_MEMORY_TOOL_RESULT_STORE_SCHEMA } from '../../src/offload/memory-store.js';
import { testJob } from '../../src/testing/index.js';
import { defineLimit, LimitStore, type LimitStoreOptions } from '../../src/limits/index.js';
import { LIMIT_STORE_SCHEMA } from '../../src/limits/limit-store.js';
import { startRedis, type RedisHandle } from '../support/redis.js';

/** How one option is generated and judged. `usable` sees only given values (never `undefined`). */
interface OptionCase {
  readonly required?: boolean;
  /** Values the option's contract allows. */
  readonly good: fc.Arbitrary<unknown>;
  /** The oracle: whether a given value is one the option can work with. */
  usable(value: unknown): boolean;
}

/** One case per option of `T`: missing or extra keys do not compile. */
type Cases<T> = { readonly [K in keyof Required<T>]: OptionCase };

const MAX_TIMER = 2 ** 31 - 1;
const isWhole = (v: unknown, min: number, max = Number.MAX_SAFE_INTEGER): boolean =>
  typeof v === 'number' && Number.isInteger(v) && v >= min && v <= max;
const isText = (v: unknown): boolean => typeof v === 'string' && v.trim().length > 0;
const hasMethods = (v: unknown, ...names: string[]): boolean =>
  (typeof v === 'object' || typeof v === 'function') &&
  v !== null &&
  names.every((n) => typeof (v as Record<string, unknown>)[n] === 'function');

/** Values that are wrong for most options, mixed with anything at all. */
const junk: fc.Arbitrary<unknown> = fc.oneof(
  fc.constantFrom<unknown>(
    Number.NaN,
    Infinity,
    -Infinity,
    -1,
    -1000,
    -5,
    0,
    1.5,
    2 ** 53,
    '',
    '   ',
    'Bash',
    '30000',
    null,
    true,
    false,
    [],
    {},
    ['Bash'],
    () => 1,
    Symbol('s'),
    5n,
  ),
  fc.integer({ min: -10, max: 10 }),
  fc.double(),
  fc.string({ maxLength: 8 }),
  fc.anything({ maxDepth: 1 }),
);

const whole = (min: number, max = Number.MAX_SAFE_INTEGER): OptionCase => ({
  good: fc.integer({ min, max }),
  usable: (v) => isWhole(v, min, max),
});
/** A retention the works-check can read back within (any whole number ≥ 1 is usable). */
const retention: OptionCase = { good: fc.integer({ min: 60_000, max: Number.MAX_SAFE_INTEGER }), usable: (v) => isWhole(v, 1) };
/** A command deadline the works-check can meet (any whole number of ms a timer takes is usable). */
const commandTimeout: OptionCase = { good: fc.integer({ min: 10_000, max: MAX_TIMER }), usable: (v) => isWhole(v, 1, MAX_TIMER) };
const flag: OptionCase = { good: fc.boolean(), usable: (v) => typeof v === 'boolean' };
/** A receipt layout: 2, 4 or 5, nothing else (not '4', not 3). */
const receiptLayout: OptionCase = { good: fc.constantFrom(2, 4, 5), usable: (v) => v === 2 || v === 4 || v === 5 };
const text: OptionCase = { good: fc.string({ minLength: 1, maxLength: 16 }).filter(isText), usable: isText };
const prefix: OptionCase = {
  good: fc.stringMatching(/^[A-Za-z0-9._~:/-]{1,12}$/),
  usable: (v) => typeof v === 'string' && /^[A-Za-z0-9._~:/-]+$/.test(v),
};
const stringArray: OptionCase = {
  good: fc.array(fc.string({ minLength: 1, maxLength: 8 }).filter(isText), { maxLength: 3 }),
  usable: (v) => Array.isArray(v) && v.every(isText),
};

/** What a durability object must be: replicas ≥ 0, timeoutMs ≥ 1, aof boolean, asking for something, no other key. */
function durabilityUsable(v: unknown): boolean {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return false;
  const d = v as Record<string, unknown>;
  if (Object.keys(d).some((k) => d[k] !== undefined && !['replicas', 'timeoutMs', 'aof'].includes(k))) return false;
  if (!isWhole(d['replicas'], 0)) return false;
  if (d['timeoutMs'] !== undefined && !isWhole(d['timeoutMs'], 1)) return false;
  if (d['aof'] !== undefined && typeof d['aof'] !== 'boolean') return false;
  return d['replicas'] !== 0 || d['aof'] === true;
}

const durabilityJunk = fc.constantFrom<unknown>(
  { replicas: -1 },
  { replicas: 0 },
  { replicas: Number.NaN },
  { replicas: 0, aof: 'yes' },
  { replicas: 0, aof: true, timeoutMs: 0 },
  { replicas: 0, aof: true, timeoutMs: Number.POSITIVE_INFINITY },
  { replica: 1 },
  { replicas: 0, aof: true, timeout: 100 },
  'aof',
);

let handle: RedisHandle;
let redis: Redis;
/** Whether the server fsyncs an AOF and has WAITAOF (Redis 7.2+), so `durability: { replicas: 0, aof: true }` can be met. */
let aofServer = false;
const cleanups: (() => Promise<unknown>)[] = [];

beforeAll(async () => {
  handle = await startRedis({ appendonly: true });
  redis = new Redis(handle.url, { maxRetriesPerRequest: 3 });
  const reply = (await redis.call('CONFIG', 'GET', 'appendonly').catch(() => [])) as string[];
  aofServer = reply[1] === 'yes' && (await hasWaitAof(redis));
});

afterAll(async () => {
  for (const cleanup of cleanups.splice(0)) await cleanup().catch(() => undefined);
  await redis?.quit().catch(() => redis.disconnect());
  await handle?.stop();
});

const durability = (): OptionCase => ({
  // Only AOF durability can be met by one server; replicas would time out every claim.
  good: aofServer
    ? fc.record({ replicas: fc.constant(0), aof: fc.constant(true), timeoutMs: fc.integer({ min: 200, max: 5000 }) })
    : fc.constant(undefined),
  usable: durabilityUsable,
});
const connection = (): OptionCase => ({ required: true, good: fc.constant(redis), usable: (v) => v === redis });

const echo = defineTool({ name: 'echo', input: z.object({}), effect: 'opaque', execute: () => 'ok' });
const silent = pino({ level: 'silent' });
const tools: OptionCase = {
  required: true,
  good: fc.constantFrom<unknown>([echo], new Set([echo])),
  // Any iterable; an array must hold tools (an object with a name and execute), at least one.
  usable: (v) =>
    typeof v === 'object' &&
    v !== null &&
    typeof (v as Iterable<unknown>)[Symbol.iterator] === 'function' &&
    (!Array.isArray(v) || (v.length > 0 && v.every((t) => typeof t?.name === 'string' && typeof t?.execute === 'function'))),
};
const resultShaping = {
  resultStore: { good: fc.constant(new InMemoryToolResultStore()), usable: (v: unknown) => hasMethods(v, 'put', 'get', 'ownerOf') },
  offloadThresholdChars: whole(1),
  maxResultChars: whole(1),
};

function workerCases(): Cases<ToolReceiptsOptions> {
  return {
    redis: connection(),
    tools,
    prefix,
    leaseMs: whole(1, MAX_TIMER),
    retentionMs: retention,
    commandTimeoutMs: commandTimeout,
    durability: durability(),
    groupCommit: flag,
    receiptLayout,
    logger: { good: fc.constant(silent), usable: (v) => hasMethods(v, 'child', 'info', 'warn', 'isLevelEnabled') },
    digest: {
      good: fc.constantFrom(sha256Digest, hmacSha256Digest('k'), async (c: string) => sha256Digest(c)),
      usable: (v) => typeof v === 'function',
    },
    onAmbiguous: { good: fc.constantFrom('fail', 'report'), usable: (v) => v === 'fail' || v === 'report' },
    waitJitterMs: whole(0, MAX_TIMER),
    maxWaitMs: whole(10, MAX_TIMER),
    owner: text,
    events: { good: fc.constant(new ToolReceiptsEvents()), usable: (v) => hasMethods(v, 'on', 'emit') },
    destructiveTools: stringArray,
    reshaper: { good: fc.constant({ reshape: async () => ({ role: 'assistant', content: [] }) }), usable: (v) => hasMethods(v, 'reshape') },
    maxRepairAttempts: whole(0),
    backendModel: text,
    telemetry: { good: fc.constant(NOOP_OBSERVER), usable: (v) => hasMethods(v, 'callStarted') },
    // A limit so large that no run of this test reaches it; its definitions' own cases are in test/limits.
    limits: {
      good: fc.constantFrom<unknown>([], [defineLimit({ name: 'calls', per: 'tenant', max: 1_000_000, windowMs: 60_000 })]),
      usable: (v) => Array.isArray(v) && v.every((l) => typeof l === 'object' && l !== null && 'name' in l),
    },
    limitReservationMs: whole(1, MAX_TIMER),
    // A rule that never asks, so the works-check's call still runs at once.
    approval: { good: fc.constant(() => false), usable: (v) => v === 'always' || typeof v === 'function' },
    redact: { good: fc.constant((args: unknown) => args), usable: (v) => typeof v === 'function' },
    approvalTimeoutMs: whole(1, MAX_TIMER),
    ...resultShaping,
  };
}

/**
 * Random options for `cases`: each option left out (unless required) or
 * given a value its contract allows; then, in three runs of four, one option is given junk
 * instead, or an unknown name one edit away from a real one is added. One
 * wrong thing at a time, so a refusal must name exactly it and an option
 * whose check is missing cannot hide behind another's. Comes with what the
 * oracle expects.
 */
function optionsFor<T>(cases: Cases<T>): fc.Arbitrary<{ options: Record<string, unknown>; wrong: string[]; misspelt?: string }> {
  const entries = Object.entries(cases) as [string, OptionCase][];
  const names = entries.map(([name]) => name);
  const clean = fc.tuple(
    ...entries.map(([name, c]) =>
      (c.required ? c.good : fc.oneof({ arbitrary: fc.constant(undefined), weight: 1 }, { arbitrary: c.good, weight: 2 })).map(
        (value) => [name, value] as const,
      ),
    ),
  );
  const spoiler = fc.oneof(
    { arbitrary: fc.constant({ kind: 'none' as const }), weight: 1 },
    {
      // Junk the oracle rejects: usable values come from `good`, which the works-checks can read back in time.
      arbitrary: fc
        .constantFrom(...entries)
        .chain(([name, c]) =>
          junk
            .filter((value) => (value === undefined ? c.required === true : !c.usable(value)))
            .map((value) => ({ kind: 'junk' as const, name, value })),
        ),
      weight: 2,
    },
    { arbitrary: fc.record({ kind: fc.constant('misspelt' as const), name: fc.constantFrom(...names).map((n) => `${n}X`) }), weight: 1 },
  );
  return fc.tuple(clean, spoiler).map(([pairs, spoil]) => {
    const options: Record<string, unknown> = {};
    for (const [name, value] of pairs) if (value !== undefined) options[name] = value;
    if (spoil.kind === 'junk') {
      if (spoil.value === undefined) delete options[spoil.name];
      else options[spoil.name] = spoil.value;
    }
    if (spoil.kind === 'misspelt') options[spoil.name] = 1;
    const wrong = names.filter((name) => {
      const c = (cases as Record<string, OptionCase>)[name]!;
      const value = options[name];
      return value === undefined ? c.required === true : !c.usable(value);
    });
    return spoil.kind === 'misspelt' ? { options, wrong, misspelt: spoil.name } : { options, wrong };
  });
}

/** Asserts `error` is the refusal the oracle expects: a wrong option named, or the misspelt one. */
function expectRefusal(error: unknown, wrong: readonly string[], misspelt: string | undefined): void {
  expect(error).toBeInstanceOf(ToolReceiptsError);
  const refusal = error as ToolReceiptsError & { option?: string };
  if (refusal.code === 'redis.invalid_connection') {
    expect({ wrong, misspelt }).toEqual({ wrong: ['redis'], misspelt: undefined });
    return;
  }
  expect(refusal.code).toBe('options.invalid');
  const root = refusal.option?.split(/[.[]/)[0];
  expect([...wrong, ...(misspelt ? [misspelt] : [])]).toEqual([root]);
}

/**
 * The property for one entry point: `make` either throws the refusal the
 * oracle expects (and only when it expects one), or what it made passes `works`.
 */
async function checkEntryPoint<T, R>(
  cases: Cases<T>,
  make: (options: T) => R,
  works: (made: R, options: T) => Promise<void>,
  runs = 200,
): Promise<void> {
  const seen = { refused: 0, worked: 0 };
  await fc.assert(
    fc.asyncProperty(optionsFor(cases), async ({ options, wrong, misspelt }) => {
      let made: R;
      try {
        made = make(options as T);
      } catch (error) {
        expectRefusal(error, wrong, misspelt);
        seen.refused += 1;
        return;
      }
      expect({ accepted: options, wrong, misspelt }).toEqual({ accepted: options, wrong: [], misspelt: undefined });
      await works(made, options as T);
      seen.worked += 1;
    }),
    { numRuns: runs },
  );
  // Both branches were taken (each in a good share of the runs; under a tenth is a broken generator, not chance).
  expect(seen.worked).toBeGreaterThanOrEqual(runs / 10);
  expect(seen.refused).toBeGreaterThanOrEqual(runs / 10);
}

let run = 0;
const freshRun = () => ({ tenantId: 'tenant', runId: `run-${process.pid}-${(run += 1)}-${Math.random().toString(36).slice(2)}` });

describe('every option of every entry point: refused where given, or working', () => {
  it('withToolReceipts: a processor that runs a job against real Redis', async () => {
    await checkEntryPoint(workerCases(), withToolReceipts, async (processor) => {
      const data = { ...freshRun(), calls: [{ id: 'c1', name: 'echo', input: {} }] };
      const result = await processor(testJob(data).job, 'token');
      expect(result.results).toHaveLength(1);
      expect(result.results[0]).toMatchObject({ tool_use_id: 'c1' });
      expect(result.results[0]!.is_error).toBeUndefined();
    });
  });

  it('reconcileAmbiguous: a sweep that walks the receipts (the workers\u2019 own options accepted)', async () => {
    // The sweep checks its options inside the promise it returns.
    await fc.assert(
      fc.asyncProperty(optionsFor(workerCases()), async ({ options, wrong, misspelt }) => {
        const outcome = await reconcileAmbiguous(options as unknown as ReconcileSweepOptions).then(
          (swept) => ({ swept }),
          (error: unknown) => ({ error }),
        );
        if ('error' in outcome) return expectRefusal(outcome.error, wrong, misspelt);
        expect({ wrong, misspelt }).toEqual({ wrong: [], misspelt: undefined });
        expect(Array.isArray(outcome.swept)).toBe(true);
      }),
      { numRuns: 100 },
    );
  });

  it('ReceiptStore: a store that claims and completes', async () => {
    const cases: Cases<ReceiptStoreOptions> = {
      redis: connection(),
      prefix,
      leaseMs: whole(1, MAX_TIMER),
      retentionMs: retention,
      owner: text,
      commandTimeoutMs: commandTimeout,
      durability: durability(),
      groupCommit: flag,
      receiptLayout,
    };
    await checkEntryPoint(
      cases,
      (o) => new ReceiptStore(o),
      async (store) => {
        const key = { ...freshRun(), toolName: 'echo', argsHash: 'h1' };
        const claim = await store.claim(key, { effect: 'opaque' });
        expect(claim.decision.kind).toBe('execute');
        await store.complete(key, claim.fence!, 'ok');
        expect((await store.inspect(key))?.status).toBe('completed');
      },
    );
  });

  it('BreakerStore: a breaker that counts a failure', async () => {
    const cases: Cases<BreakerStoreOptions> = {
      redis: connection(),
      prefix,
      retentionMs: retention,
      commandTimeoutMs: commandTimeout,
      maxFailures: whole(1),
      maxRejections: whole(1),
    };
    await checkEntryPoint(
      cases,
      (o) => new BreakerStore(o),
      async (breaker, options) => {
        const { tenantId, runId } = freshRun();
        const record = await breaker.recordFailure(tenantId, runId, 'echo');
        expect(record.failures).toBe(1);
        expect(record.removed).toBe((options.maxFailures ?? 5) <= 1);
      },
    );
  });

  it('ReconcileStore: a store whose reconcile finds nothing to reconcile', async () => {
    const cases: Cases<ReconcileStoreOptions> = {
      redis: connection(),
      prefix,
      retentionMs: retention,
      commandTimeoutMs: commandTimeout,
      durability: durability(),
    };
    await checkEntryPoint(
      cases,
      (o) => new ReconcileStore(o),
      async (reconciles) => {
        const key = { ...freshRun(), toolName: 'echo', argsHash: 'h1' };
        const start = await reconciles.begin(key, { attempt: 1, epoch: 'e1' }, 1000, 'w');
        expect(start.kind).toBe('movedOn');
      },
    );
  });

  it('LimitStore: a store that grants a reservation and gives it back', async () => {
    const cases: Cases<LimitStoreOptions> = {
      redis: connection(),
      prefix,
      reservationMs: whole(1, MAX_TIMER),
      durability: durability(),
      commandTimeoutMs: commandTimeout,
    };
    const once = defineLimit({ name: 'once', per: 'run', max: 1, windowMs: 3_600_000 });
    await checkEntryPoint(
      cases,
      (o) => new LimitStore(o),
      async (limits) => {
        const key = { ...freshRun(), toolName: 'echo', argsHash: 'h1' };
        const reserved = await limits.reserve(once, key);
        expect(reserved.granted).toBe(true);
        if (reserved.granted) expect(await limits.release(reserved.reservation)).toBe('pending');
      },
    );
  });

  it('RedisToolResultStore and InMemoryToolResultStore: stores that keep and return a result', async () => {
    const redisCases: Cases<RedisToolResultStoreOptions> = {
      redis: connection(),
      prefix,
      // Kept long enough to be read back (a 1 ms retention is usable, and gone before the get).
      retentionMs: {
        good: fc.oneof(fc.constant(null), fc.integer({ min: 60_000, max: Number.MAX_SAFE_INTEGER })),
        usable: (v) => v === null || isWhole(v, 1),
      },
      durability: durability(),
      commandTimeoutMs: commandTimeout,
    };
    const keeps = async (store: RedisToolResultStore | InMemoryToolResultStore) => {
      const ref = `s${(run += 1)}-call-x`;
      await store.put(ref, 'hello');
      expect((await store.get(ref))?.content).toBe('hello');
    };
    await checkEntryPoint(redisCases, (o) => new RedisToolResultStore(o), keeps);
    const memoryCases: Cases<InMemoryToolResultStoreOptions> = { maxTotalChars: whole(1) };
    await checkEntryPoint(memoryCases, (o) => new InMemoryToolResultStore(o), keeps);
  });

  it('createToolCallClient: a client made on a real queue', async () => {
    const queue = new Queue(`opts-${process.pid}`, { connection: redis, prefix: handle.prefix });
    const queueEvents = new QueueEvents(`opts-${process.pid}`, { connection: { url: handle.url }, prefix: handle.prefix });
    cleanups.push(
      () => queueEvents.close(),
      () => queue.close(),
    );
    const cases: Cases<ToolCallClientOptions> = {
      queue: { required: true, good: fc.constant(queue), usable: (v) => v === queue },
      queueEvents: { required: true, good: fc.constant(queueEvents), usable: (v) => v === queueEvents },
      jobName: text,
      jobOptions: { good: fc.constant({ attempts: 2 }), usable: (v) => typeof v === 'object' && v !== null && !Array.isArray(v) },
      timeoutMs: whole(0, MAX_TIMER),
    };
    await checkEntryPoint(cases, createToolCallClient, async (client) => {
      expect(client.jobIdOf({ tenantId: 't', runId: 'r', turnId: 'u' })).toEqual(expect.any(String));
    });
  });

  it('checkRedisForReceipts: a report, or redis.unreachable only for a limit too short to answer in', async () => {
    const cases: Cases<CheckRedisOptions> = { durability: durability(), timeoutMs: whole(1, MAX_TIMER) };
    await fc.assert(
      fc.asyncProperty(optionsFor(cases), async ({ options, wrong, misspelt }) => {
        const outcome = await checkRedisForReceipts(redis, options).then(
          (report) => ({ report }),
          (error: unknown) => ({ error }),
        );
        if ('report' in outcome) {
          expect({ wrong, misspelt }).toEqual({ wrong: [], misspelt: undefined });
          expect(outcome.report.findings.length).toBeGreaterThan(0);
        } else if ((outcome.error as ToolReceiptsError).code === 'redis.unreachable') {
          expect({ wrong, misspelt }).toEqual({ wrong: [], misspelt: undefined });
          expect(options['timeoutMs']).toBeLessThan(2000);
        } else {
          expectRefusal(outcome.error, wrong, misspelt);
        }
      }),
      { numRuns: 100 },
    );
  });
});

describe('each schema names exactly the options of its interface', () => {
  it('at the type level', () => {
    expectTypeOf<keyof typeof TOOL_RECEIPTS_SCHEMA>().toEqualTypeOf<keyof ToolReceiptsOptions>();
    expectTypeOf<keyof ReconcileSweepOptions>().toMatchTypeOf<keyof typeof RECONCILE_SWEEP_SCHEMA>();
    expectTypeOf<keyof typeof TOOL_CALL_CLIENT_SCHEMA>().toEqualTypeOf<keyof ToolCallClientOptions>();
    expectTypeOf<keyof typeof RECEIPT_STORE_SCHEMA>().toEqualTypeOf<keyof ReceiptStoreOptions>();
    expectTypeOf<keyof typeof BREAKER_STORE_SCHEMA>().toEqualTypeOf<keyof BreakerStoreOptions>();
    expectTypeOf<keyof typeof RECONCILE_STORE_SCHEMA>().toEqualTypeOf<keyof ReconcileStoreOptions>();
    expectTypeOf<keyof typeof REDIS_TOOL_RESULT_STORE_SCHEMA>().toEqualTypeOf<keyof RedisToolResultStoreOptions>();
    expectTypeOf<keyof typeof IN_MEMORY_TOOL_RESULT_STORE_SCHEMA>().toEqualTypeOf<keyof InMemoryToolResultStoreOptions>();
    expectTypeOf<keyof typeof CHECK_REDIS_SCHEMA>().toEqualTypeOf<keyof CheckRedisOptions>();
    expectTypeOf<keyof typeof LIMIT_STORE_SCHEMA>().toEqualTypeOf<keyof LimitStoreOptions>();
    expectTypeOf<'replicas' | 'timeoutMs' | 'aof'>().toEqualTypeOf<keyof DurabilityOptions>();
  });

  it('at run time, against the cases this test covers', () => {
    const keys = (o: object) => Object.keys(o).sort();
    expect(keys(TOOL_RECEIPTS_SCHEMA)).toEqual(keys(workerCases()));
    expect(keys(RECONCILE_SWEEP_SCHEMA)).toEqual(keys(workerCases()));
    expect(keys(RECEIPT_STORE_SCHEMA)).toEqual([
      'commandTimeoutMs',
      'durability',
      'groupCommit',
      'leaseMs',
      'owner',
      'prefix',
      'receiptLayout',
      'redis',
      'retentionMs',
    ]);
    expect(keys(BREAKER_STORE_SCHEMA)).toEqual(['commandTimeoutMs', 'maxFailures', 'maxRejections', 'prefix', 'redis', 'retentionMs']);
    expect(keys(RECONCILE_STORE_SCHEMA)).toEqual(['commandTimeoutMs', 'durability', 'prefix', 'redis', 'retentionMs']);
    expect(keys(REDIS_TOOL_RESULT_STORE_SCHEMA)).toEqual(['commandTimeoutMs', 'durability', 'prefix', 'redis', 'retentionMs']);
    expect(keys(IN_MEMORY_TOOL_RESULT_STORE_SCHEMA)).toEqual(['maxTotalChars']);
    expect(keys(TOOL_CALL_CLIENT_SCHEMA)).toEqual(['jobName', 'jobOptions', 'queue', 'queueEvents', 'timeoutMs']);
    expect(keys(CHECK_REDIS_SCHEMA)).toEqual(['durability', 'timeoutMs']);
    expect(keys(LIMIT_STORE_SCHEMA)).toEqual(['commandTimeoutMs', 'durability', 'prefix', 'redis', 'reservationMs']);
  });
});
