/**
 * "Start attempt n + 1" is one piece of Lua (includes/start-attempt.lua):
 * a takeover (reclaim-3.lua), a provider-keyed re-run (reclaim-keyed-3.lua)
 * and a reconcile's not_started verdict with a lease (reconcile-settle-3.lua)
 * leave the same fields on the receipt, apart from each one's own.
 */
import type { Redis } from 'ioredis';
import { beforeAll, describe, expect, it } from 'vitest';
import { breakerField } from '../../src/redis/keys.js';
import { parseClaimObservation } from '../../src/redis/receipts/channel.js';
import { runScript } from '../../src/redis/scripts/scripts.js';
import { useRedis, waitUntil } from '../support/redis-fixture.js';

const fixture = useRedis();
let redis: Redis;
let n = 0;
beforeAll(() => {
  redis = fixture.connect();
});

const RETENTION = 60_000;
const LEASE = 30_000;
const OWNER = 'w2';
const JOB = JSON.stringify({ queue: 'q', prefix: 'bull', id: '7' });
const EPOCH = 'epoch-1';

/** The receipt, run index and counting set of a fresh call: the KEYS of a transition. */
function keysFor(): [receipt: string, index: string, count: string] {
  n += 1;
  const tag = `{t${n}|r}`;
  const prefix = fixture.handle().prefix;
  return [`${prefix}:rcpt:${tag}:tool:h`, `${prefix}:run:${tag}`, `${prefix}:cnt:${tag}`];
}

/** Claims attempt 1 with a 1 ms lease and waits until the server clock has passed it. */
async function claimedAndLapsed(keys: readonly string[], effect: string): Promise<void> {
  const [receipt, index, count] = keys;
  const breaker = `${index!.replace(':run:', ':brk:')}`;
  const args = [
    1,
    RETENTION,
    'w1',
    effect,
    't',
    'r',
    'tool',
    'h',
    breakerField('tool', 'removed'),
    breakerField('tool', 'rejections'),
    EPOCH,
    JOB,
  ];
  const claimed = parseClaimObservation('claim', await runScript(redis, 'claim', [receipt!, index!, breaker, count!], args));
  expect(claimed.code).toBe(1);
  await waitUntil(
    () => redis.time(),
    ([s, us]) => Number(s) * 1000 + Math.floor(Number(us) / 1000) > Number(claimed.leaseUntilMs),
    5_000,
    'the lease to lapse',
  );
}

/**
 * What the previous attempt (and an older release) may have left: an error
 * and a tier, a settle time, an ambiguity flag, a resolve time, a late
 * heartbeat; no `schema` field (a receipt of layout 1) and a stale updated_ms.
 */
async function leaveLeftovers(receipt: string): Promise<void> {
  await redis.hset(receipt, {
    error: 'old error',
    tier: 'old tier',
    completed_ms: '1',
    ambiguous_ms: '1',
    resolved_ms: '1',
    late_heartbeat_ms: '1',
    updated_ms: '1',
  });
  await redis.hdel(receipt, 'schema');
}

/** Each way of starting attempt 2, from a receipt it accepts, with the same leftovers. */
const STARTS = {
  async reclaim(keys: readonly string[]) {
    await claimedAndLapsed(keys, 'resumable');
    expect(((await runScript(redis, 'fail', keys, [1, 'rate limited', 'transient', RETENTION, EPOCH])) as unknown[])[0]).toBe(1);
    await leaveLeftovers(keys[0]!);
    const reply = (await runScript(redis, 'reclaim', keys, [
      'failed',
      1,
      LEASE,
      RETENTION,
      OWNER,
      EPOCH,
      'resumable',
      JOB,
      'token-2',
    ])) as unknown[];
    expect(reply.slice(0, 3)).toEqual([1, 'running', 2]);
  },
  async 'keyed reclaim'(keys: readonly string[]) {
    await claimedAndLapsed(keys, 'opaque');
    await leaveLeftovers(keys[0]!);
    expect(
      ((await runScript(redis, 'reclaim-keyed', keys, [1, 3_600_000, LEASE, RETENTION, OWNER, JOB, EPOCH])) as unknown[]).slice(0, 2),
    ).toEqual([1, 2]);
  },
  async 'reconcile not_started'(keys: readonly string[]) {
    await claimedAndLapsed(keys, 'opaque');
    await leaveLeftovers(keys[0]!);
    const begun = (await runScript(redis, 'reconcile-begin', keys, [1, 10_000, OWNER, RETENTION, '', EPOCH])) as number[];
    expect(begun[0]).toBe(1);
    const settled = (await runScript(redis, 'reconcile-settle', keys, [
      1,
      begun[1]!,
      'not_started',
      OWNER,
      '',
      LEASE,
      RETENTION,
      JOB,
      EPOCH,
    ])) as unknown[];
    expect(settled.slice(0, 2)).toEqual([1, 2]);
  },
};

/** The fields only one way writes: a takeover's claim token, a keyed re-run's time, a reconcile's verdict and history. */
const OWN_FIELDS: Record<keyof typeof STARTS, readonly string[]> = {
  reclaim: ['claim_token'],
  'keyed reclaim': ['keyed_rerun_ms'],
  'reconcile not_started': ['reconciled', 'reconciled_ms', 'reconciled_by', 'reconciled_attempt', 'reconciles', 'hist_seq', 'hist:1'],
};

describe('starting attempt n + 1', () => {
  it('a reclaim, a keyed reclaim and a reconcile not_started verdict with a lease leave the same fields, apart from their own', async () => {
    const seen = new Map<string, { fields: Record<string, string>; ttl: number; score: string | null }>();
    for (const [way, start] of Object.entries(STARTS)) {
      const keys = keysFor();
      await start(keys);
      const fields = await redis.hgetall(keys[0]);
      for (const own of OWN_FIELDS[way as keyof typeof STARTS]) {
        expect(fields, `${way} writes ${own}`).toHaveProperty([own]);
        delete fields[own];
      }
      seen.set(way, { fields, ttl: await redis.pttl(keys[0]), score: await redis.zscore(keys[1], keys[0]) });
    }

    const names = [...seen.values()].map(({ fields }) => Object.keys(fields).sort());
    expect(names[1], 'keyed reclaim and reclaim').toEqual(names[0]);
    expect(names[2], 'reconcile not_started and reclaim').toEqual(names[0]);
    for (const [way, { fields, ttl, score }] of seen) {
      expect(fields, way).toMatchObject({ status: 'running', attempts: '2', owner: OWNER, schema: '2', 'job:2': JOB });
      expect(fields.updated_ms, `${way}: updated_ms`).toBe(fields.started_ms);
      expect(Number(fields.lease_until_ms), `${way}: lease_until_ms`).toBe(Number(fields.started_ms) + LEASE);
      for (const cleared of ['error', 'tier', 'completed_ms', 'ambiguous_ms', 'resolved_ms', 'late_heartbeat_ms']) {
        expect(fields, `${way} clears ${cleared}`).not.toHaveProperty([cleared]);
      }
      expect(ttl, `${way}: the receipt lives lease + retention`).toBeGreaterThan(LEASE + RETENTION - 5_000);
      expect(score, `${way}: the run index scores it by created_ms`).toBe(fields.created_ms);
    }
  });
});
