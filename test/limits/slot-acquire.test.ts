/**
 * The acquire script of in-flight caps (lua/limit-slot-acquire-3.lua) alone,
 * on a real Redis and its clock (see docs/limits.md, in-flight caps;
 * test/limits/cap-store.test.ts has the store around it): at most k slots held, a holder asking again
 * keeps its slot, a lapsed lease frees it, waiting calls get slots in
 * arrival order, a refusal takes no place, and fifty calls racing from ten
 * connections get exactly k slots and distinct places in line.
 */
import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { runScript } from '../../src/redis/scripts/scripts.js';
import { useRedis, waitUntil } from '../support/redis-fixture.js';

const fixture = useRedis();

/** The keys of one fresh cap, one hash tag. */
function capKeys(): [string, string, string] {
  const state = `${fixture.handle().prefix}:lim:tenant:{t-${randomBytes(4).toString('hex')}}:browse`;
  return [state, `${state}:held`, `${state}:line`];
}

interface Answer {
  readonly granted: boolean;
  readonly nowMs: number;
  readonly held: number;
  readonly position: number;
  readonly retryAtMs: number;
}

async function acquire(
  redis: Redis,
  keys: [string, string, string],
  receipt: string,
  options: { k: number; leaseMs?: number; onLimit?: string; token?: string; adopt?: boolean },
) {
  const token = options.token ?? `token-${receipt}`;
  const args = [
    receipt,
    options.k,
    options.leaseMs ?? 60_000,
    options.onLimit ?? 'wait',
    `job-${receipt}`,
    60_000,
    'browse',
    token,
    options.adopt ? '1' : '0',
  ];
  const [code, nowMs, , held, position, retryAtMs] = (await runScript(redis, 'limit-slot-acquire', keys, args)) as number[];
  return { granted: code === 1, nowMs: nowMs!, held: held!, position: position!, retryAtMs: retryAtMs! } satisfies Answer;
}

describe('an in-flight cap’s slots (the script alone)', () => {
  it('holds at most k, keeps a holder’s slot, frees a lapsed one, and admits waiting calls in arrival order', async () => {
    const redis = fixture.connect();
    const keys = capKeys();
    expect(await acquire(redis, keys, 'a', { k: 2, leaseMs: 400 })).toMatchObject({ granted: true, held: 1 });
    const b = await acquire(redis, keys, 'b', { k: 2, leaseMs: 60_000 });
    expect(b).toMatchObject({ granted: true, held: 2 });
    expect(await acquire(redis, keys, 'c', { k: 2 })).toMatchObject({ granted: false, held: 2, position: 0 });
    expect(await acquire(redis, keys, 'd', { k: 2 })).toMatchObject({ granted: false, held: 2, position: 1 });
    // A refusal takes no place; a holder asking again keeps its slot.
    expect(await acquire(redis, keys, 'e', { k: 2, onLimit: 'refuse' })).toMatchObject({ granted: false, position: -1 });
    expect(await acquire(redis, keys, 'b', { k: 2 })).toMatchObject({ granted: true, held: 2 });

    // a stops asking: its lease lapses on the server clock, and its slot goes to c, first in line, not to d.
    const lapsed = await waitUntil(
      () => acquire(redis, keys, 'd', { k: 2 }),
      (answer) => answer.held === 1,
      10_000,
      "a's lease to lapse",
    );
    expect(lapsed).toMatchObject({ granted: false, position: 1 });
    expect(await acquire(redis, keys, 'c', { k: 2 })).toMatchObject({ granted: true, held: 2 });
    expect(await acquire(redis, keys, 'd', { k: 2 })).toMatchObject({ granted: false, position: 0 });
    expect(await redis.zrange(keys[1], 0, -1)).toEqual(expect.arrayContaining(['b', 'c']));
  });

  it('gives exactly k slots to fifty calls racing from ten connections, and each waiting one its own place', async () => {
    const connections = Array.from({ length: 10 }, () => fixture.connect());
    const keys = capKeys();
    const answers = await Promise.all(Array.from({ length: 50 }, (_, i) => acquire(connections[i % 10]!, keys, `call-${i}`, { k: 3 })));
    expect(answers.filter((a) => a.granted)).toHaveLength(3);
    const positions = answers
      .filter((a) => !a.granted)
      .map((a) => a.position)
      .sort((x, y) => x - y);
    expect(positions).toEqual(Array.from({ length: 47 }, (_, i) => i));
    expect(await connections[0]!.zcard(keys[1])).toBe(3);
  });
});
