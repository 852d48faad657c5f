import { beforeAll, describe, expect, it } from 'vitest';
import type { Redis } from 'ioredis';
import type { RedisConnection } from '../../src/redis/connection/connection.js';
import { RedisToolResultStore, DEFAULT_TOOL_RESULT_RETENTION_MS } from '../../src/offload/redis-store.js';
import { isOffloadHashKey, offloadHashKey } from '../../src/offload/redis-keys.js';
import { buildToolResultRef } from '../../src/offload/ref.js';
import { runScript } from '../../src/redis/scripts/scripts.js';
import { mixedText } from '../../src/offload/contract/support.js';
import { RedisTimeoutError } from '../../src/redis/index.js';
import { createReadToolResultTool } from '../../src/offload/index.js';
import { faultTestsSupported } from '../support/redis.js';
import { useRedis } from '../support/redis-fixture.js';

const fixture = useRedis();
let redis: Redis;
let client: RedisConnection;
let n = 0;
const fresh = (extra: { retentionMs?: number | null } = {}): RedisToolResultStore =>
  new RedisToolResultStore({ redis: client, prefix: `${fixture.handle().prefix}:r${++n}`, ...extra });

beforeAll(() => {
  redis = fixture.connect();
  client = fixture.client();
});

describe('RedisToolResultStore layout', () => {
  it('keeps one hash per session segment with c:, n:, o: (and x: for long texts) fields', async () => {
    const store = fresh();
    const ref = buildToolResultRef('sess-42', 'toolu_01', 'abc');
    await store.put(ref, 'h\u00e9llo', { sessionId: 'sess-42' });
    const key = `${store.prefix}:out:{sess-42}`;
    expect(store.hashKeyOf(ref)).toBe(key);
    expect(await redis.hgetall(key)).toEqual({
      [`c:${ref}`]: 'h\u00e9llo',
      [`n:${ref}`]: '5',
      [`o:${ref}`]: '{"sessionId":"sess-42"}',
    });
    const long = buildToolResultRef('sess-42', 'toolu_02');
    await store.put(long, 'x'.repeat(10_000));
    expect(await redis.hget(key, `x:${long}`)).toBe('000000004096000000004096000000008192000000008192');
    expect(await redis.hexists(key, `o:${long}`)).toBe(0);
  });

  it('places refs without a session segment in the shared {~unminted} hash', async () => {
    const store = fresh();
    await store.put('hand-made', 'x', { sessionId: 's' });
    expect(await redis.hget(`${store.prefix}:out:{~unminted}`, 'c:hand-made')).toBe('x');
    expect(store.hashKeyOf('tr_{forged}~x')).toBe(`${store.prefix}:out:{~unminted}`);
  });

  it('gives sessions that a naive scheme would merge different hashes, with no braces in the tag', () => {
    const keys = ['a/b', 'a_b', 'a:b', 'a{b}', 'a%2Fb', '~unminted'].map((s) => offloadHashKey('trc', buildToolResultRef(s, 'c')));
    expect(new Set(keys).size).toBe(keys.length);
    for (const key of keys) {
      expect(isOffloadHashKey('trc', key)).toBe(true);
      expect(key.slice('trc:out:'.length).replace(/^\{|\}$/g, '')).not.toMatch(/[{}:]/);
    }
    expect(isOffloadHashKey('trc', 'trc:sub:out:{x}')).toBe(false);
    expect(isOffloadHashKey('trc', 'trc:out:{x}:more')).toBe(false);
  });

  it('sets the retention as the hash TTL on each put, or none when retentionMs is null', async () => {
    const store = fresh();
    const ref = buildToolResultRef('ttl', 'c1');
    await store.put(ref, 'x');
    const ttl = await redis.pttl(store.hashKeyOf(ref));
    expect(ttl).toBeGreaterThan(DEFAULT_TOOL_RESULT_RETENTION_MS - 60_000);
    expect(ttl).toBeLessThanOrEqual(DEFAULT_TOOL_RESULT_RETENTION_MS);
    const forever = fresh({ retentionMs: null });
    await forever.put(ref, 'x');
    expect(await redis.pttl(forever.hashKeyOf(ref))).toBe(-1);
  });

  it('forgets a session hash once its retention passes', async () => {
    const store = fresh({ retentionMs: 150 });
    const ref = buildToolResultRef('short', 'c1');
    await store.put(ref, 'soon gone', { sessionId: 'short' });
    expect((await store.get(ref))?.content).toBe('soon gone');
    await new Promise((resolve) => setTimeout(resolve, 400));
    expect(await store.get(ref)).toBeUndefined();
    expect(await store.ownerOf(ref)).toBeUndefined();
  });

  it('rejects prefixes that would move the hash tag and retention that is not a positive integer', () => {
    expect(() => new RedisToolResultStore({ redis, prefix: 'a{b}' })).toThrow(
      expect.objectContaining({ code: 'options.invalid', option: 'prefix' }),
    );
    for (const retentionMs of [0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY]) {
      expect(() => new RedisToolResultStore({ redis, retentionMs })).toThrow(
        expect.objectContaining({ code: 'options.invalid', option: 'retentionMs' }),
      );
    }
  });
});

describe('RedisToolResultStore reads', () => {
  it('moves about one window per page, not the whole text', async () => {
    const store = fresh();
    const text = mixedText(2_000_000, 3);
    const ref = buildToolResultRef('big', 'c1');
    await store.put(ref, text);
    const key = store.hashKeyOf(ref);
    for (const offset of [0, 777_777, text.length - 5_000]) {
      const reply = (await runScript(client, 'offload-read', [key], [ref, offset, 20_000])) as [number, number, number, number, string];
      expect(reply[4].length).toBeLessThan(20_000 + 2 * 4096 + 2);
      expect((await store.get(ref, { offset, limit: 20_000 }))?.content).toBe(text.slice(offset, offset + 20_000));
    }
  });

  it('stores an unpaired surrogate as U+FFFD and keeps lengths unchanged', async () => {
    const store = fresh();
    const ref = buildToolResultRef('lone', 'c1');
    await store.put(ref, 'a\ud800b\udc00\ud83d\ude00');
    expect(await store.get(ref)).toEqual({ content: 'a\ufffdb\ufffd\ud83d\ude00', offset: 0, totalChars: 6 });
  });
});

describe('RedisToolResultStore owner records', () => {
  it('treats an unreadable owner record as nobody: no owner, a conflict for any owner, unattributable', async () => {
    const store = fresh();
    const ref = buildToolResultRef('tamper', 'c1');
    await store.put(ref, 'text', { sessionId: 'tamper' });
    await redis.hset(store.hashKeyOf(ref), `o:${ref}`, 'not json');
    expect(await store.ownerOf(ref)).toBeUndefined();
    await expect(store.put(ref, 'text', { sessionId: 'tamper' })).rejects.toMatchObject({
      code: 'tool_result.ref_conflict',
      stored: undefined,
    });
    await store.put(ref, 'text');
    expect(await store.deleteBySession('tamper')).toEqual({ deleted: 0, unattributable: 1 });
    expect((await store.get(ref))?.content).toBe('text');
  });

  it('sweeps only its own prefix', async () => {
    const a = fresh();
    const b = new RedisToolResultStore({ redis: client, prefix: `${a.prefix}:nested` });
    const ref = buildToolResultRef('shared', 'c1');
    await a.put(ref, 'in a', { sessionId: 'shared' });
    await b.put(ref, 'in b', { sessionId: 'shared' });
    await b.put('loose', 'unowned in b');
    expect(await a.deleteBySession('shared')).toEqual({ deleted: 1, unattributable: 0 });
    expect((await b.get(ref))?.content).toBe('in b');
  });

  it('sweeps hashes with many entries in batches', async () => {
    const store = fresh();
    const refs = Array.from({ length: 700 }, (_, i) => buildToolResultRef('many', `c${i}`));
    const pipeline = refs.map((ref, i) => store.put(ref, `t${i}`, { sessionId: i % 7 === 0 ? 'other' : 'many' }));
    await Promise.all(pipeline);
    await store.put(buildToolResultRef('many', 'loose'), 'unowned');
    expect(await store.deleteBySession('many')).toEqual({ deleted: 600, unattributable: 1 });
    expect(await redis.hlen(store.hashKeyOf(refs[0]!))).toBe(100 * 3 + 2);
  });
});

describe('RedisToolResultStore on a server that stopped answering', () => {
  it.skipIf(!faultTestsSupported())('fails every read and delete as redis.timeout, as its writes do', async () => {
    const store = new RedisToolResultStore({ redis: client, prefix: `${fixture.handle().prefix}:frozen`, commandTimeoutMs: 300 });
    const ref = buildToolResultRef('sess-frozen', 'toolu_01', 'abc');
    await store.put(ref, 'kept', { sessionId: 'sess-frozen' });
    await fixture.handle().pause();
    try {
      const failure = (attempt: Promise<unknown>) =>
        attempt.then(
          () => undefined,
          (error: unknown) => error,
        );
      const failures = await Promise.all([
        failure(store.get(ref)),
        failure(store.ownerOf(ref)),
        failure(store.deleteBySession('sess-frozen')),
        failure(createReadToolResultTool(store).read({ ref }, { sessionId: 'sess-frozen' })),
      ]);
      for (const error of failures) {
        expect(error).toBeInstanceOf(RedisTimeoutError);
        expect((error as RedisTimeoutError).code).toBe('redis.timeout');
      }
    } finally {
      await fixture.handle().resume();
    }
  });
});
