import calculateSlot from 'cluster-key-slot';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  breakerRedisKey,
  decodeKeyComponent,
  encodeKeyComponent,
  InvalidKeyPrefixError,
  isReceiptRedisKey,
  receiptCountRedisKey,
  receiptCountRedisKeyOfTag,
  receiptRedisKey,
  runIndexRedisKey,
  validateKeyPrefix,
} from '../../src/redis/keys.js';
import { receiptCallOf, receiptRedisKeyParts } from '../../src/redis/key-parts.js';

const RESERVED = /[{}:|%\s\p{Cc}]/u;
// Any JavaScript string: reserved characters, unpaired surrogates, any code point.
const anyChar = fc.oneof(
  fc.constantFrom('{', '}', ':', '|', '%', ' ', '\n', '\t', '\0', '\uD800', '\uDC00'),
  fc.string({ unit: 'binary', minLength: 1, maxLength: 1 }),
  fc.integer({ min: 0, max: 0xffff }).map((n) => String.fromCharCode(n)),
);
const anyString = fc.string({ unit: anyChar, maxLength: 24 });

/** Redis Cluster's rule: the slot is taken from the first {…} with something inside. */
function hashTagOf(key: string): string {
  const open = key.indexOf('{');
  if (open < 0) return key;
  const close = key.indexOf('}', open + 1);
  if (close < 0 || close === open + 1) return key;
  return key.slice(open + 1, close);
}

describe('encodeKeyComponent', () => {
  it('leaves unreserved characters alone and encodes the rest as upper-case %XX of UTF-8', () => {
    expect(encodeKeyComponent('abc-XYZ_0.9~')).toBe('abc-XYZ_0.9~');
    expect(encodeKeyComponent('a{b}c:d|e%f g\nh')).toBe('a%7Bb%7Dc%3Ad%7Ce%25f%20g%0Ah');
    expect(encodeKeyComponent('é')).toBe('%C3%A9');
    expect(encodeKeyComponent('😀')).toBe('%F0%9F%98%80');
    expect(encodeKeyComponent('')).toBe('');
  });

  it('keeps unpaired surrogates distinct from U+FFFD and from each other', () => {
    const values = ['\uD800', '\uDBFF', '\uDC00', '\uFFFD', '\uD800\uD800'];
    const encoded = values.map(encodeKeyComponent);
    expect(new Set(encoded).size).toBe(values.length);
    for (const [i, e] of encoded.entries()) expect(decodeKeyComponent(e)).toBe(values[i]);
  });

  it('is injective, reversible, and never emits a reserved character (property)', () => {
    fc.assert(
      fc.property(anyString, anyString, (a, b) => {
        const ea = encodeKeyComponent(a);
        const eb = encodeKeyComponent(b);
        expect(RESERVED.test(ea.replace(/%[0-9A-F]{2}/g, ''))).toBe(false);
        expect(ea).toMatch(/^(?:[A-Za-z0-9._~-]|%[0-9A-F]{2})*$/);
        expect(decodeKeyComponent(ea)).toBe(a);
        if (a !== b) expect(ea).not.toBe(eb);
      }),
      { numRuns: 2000 },
    );
  });

  it('rejects text the encoder cannot have produced', () => {
    expect(() => decodeKeyComponent('a%2')).toThrow(RangeError);
    expect(() => decodeKeyComponent('a:b')).toThrow(RangeError);
    expect(() => decodeKeyComponent('%80')).toThrow(RangeError);
  });
});

describe('key layout', () => {
  it('matches the documented shape', () => {
    const key = { tenantId: 'acme', runId: 'run-1', toolName: 'send_email', argsHash: 'ab12' };
    expect(receiptRedisKey('trc', key)).toBe('trc:rcpt:{acme|run-1}:send_email:ab12');
    expect(runIndexRedisKey('trc', 'acme', 'run-1')).toBe('trc:run:{acme|run-1}');
    expect(breakerRedisKey('trc', 'acme', 'run-1')).toBe('trc:brk:{acme|run-1}');
    expect(receiptCountRedisKey('trc', 'acme', 'run-1')).toBe('trc:cnt:{acme|run-1}');
  });

  it('gives distinct, well-formed keys in one slot per run, whatever the components (property)', () => {
    const keyArb = fc.record({ tenantId: anyString, runId: anyString, toolName: anyString, argsHash: anyString });
    fc.assert(
      fc.property(keyArb, keyArb, fc.constantFrom('trc', 'app:v2', 't0'), (a, b, prefix) => {
        const ka = receiptRedisKey(prefix, a);
        const kb = receiptRedisKey(prefix, b);
        expect(isReceiptRedisKey(prefix, ka)).toBe(true);
        const same = a.tenantId === b.tenantId && a.runId === b.runId && a.toolName === b.toolName && a.argsHash === b.argsHash;
        expect(ka === kb).toBe(same);
        // Every key of run a shares one hash tag, hence one slot.
        const runKeys = [
          ka,
          receiptRedisKey(prefix, { ...a, toolName: `${a.toolName}x`, argsHash: 'other' }),
          runIndexRedisKey(prefix, a.tenantId, a.runId),
          breakerRedisKey(prefix, a.tenantId, a.runId),
          receiptCountRedisKey(prefix, a.tenantId, a.runId),
        ];
        // The registry's member is the text inside the tag, and gives back the same counting set.
        const tag = hashTagOf(ka);
        expect(receiptCountRedisKeyOfTag(prefix, tag)).toBe(receiptCountRedisKey(prefix, a.tenantId, a.runId));
        // stats --tenant keeps a member by its encoded tenant: exactly the members of that tenant.
        expect(tag.startsWith(`${encodeKeyComponent(b.tenantId)}|`)).toBe(a.tenantId === b.tenantId);
        const tags = new Set(runKeys.map(hashTagOf));
        expect(tags.size).toBe(1);
        expect(new Set(runKeys.map((k) => calculateSlot(k))).size).toBe(1);
        // Different runs never share a hash tag.
        if (a.tenantId !== b.tenantId || a.runId !== b.runId) expect(hashTagOf(kb)).not.toBe(hashTagOf(ka));
      }),
      { numRuns: 1500 },
    );
  });

  it('keeps hostile components inside their hash tag: {, }, :, |, spaces and newlines', () => {
    const hostile = [
      { tenantId: '{a}', runId: 'b', toolName: 't', argsHash: 'h' },
      { tenantId: 'a', runId: '{b}', toolName: 't', argsHash: 'h' },
      { tenantId: 'a|b', runId: '', toolName: 't', argsHash: 'h' },
      { tenantId: 'a', runId: 'b|', toolName: 't', argsHash: 'h' },
      { tenantId: 'a', runId: 'b', toolName: 't:h', argsHash: '' },
      { tenantId: 'a', runId: 'b', toolName: 't', argsHash: ':h' },
      { tenantId: 'a b\n', runId: '}{', toolName: 'x y', argsHash: 'h\r\n' },
    ];
    const keys = hostile.map((k) => receiptRedisKey('trc', k));
    expect(new Set(keys).size).toBe(hostile.length);
    for (const [i, k] of keys.entries()) {
      const h = hostile[i]!;
      expect(isReceiptRedisKey('trc', k)).toBe(true);
      expect(k).not.toMatch(/[\s]/);
      expect(calculateSlot(k)).toBe(calculateSlot(runIndexRedisKey('trc', h.tenantId, h.runId)));
      expect(calculateSlot(k)).toBe(calculateSlot(breakerRedisKey('trc', h.tenantId, h.runId)));
    }
  });

  it('refuses prefixes that would move the hash tag or break SCAN patterns', () => {
    expect(validateKeyPrefix('trc')).toBe('trc');
    expect(validateKeyPrefix('app:v2/receipts')).toBe('app:v2/receipts');
    for (const bad of ['', 'a{b', 'a}b', 'a*', 'a?', 'a[b]', 'a b', 'a\\b', 'a\n']) {
      expect(() => validateKeyPrefix(bad)).toThrow(InvalidKeyPrefixError);
    }
    expect(() => validateKeyPrefix('{x}')).toThrow(expect.objectContaining({ code: 'receipt.invalid_prefix' }));
  });

  it('tells receipt keys of this prefix from keys of a longer prefix', () => {
    const key = { tenantId: 'a', runId: 'b', toolName: 't', argsHash: 'h' };
    expect(isReceiptRedisKey('trc', receiptRedisKey('trc:rcpt:x', key))).toBe(false);
    expect(isReceiptRedisKey('trc', runIndexRedisKey('trc', 'a', 'b'))).toBe(false);
    expect(isReceiptRedisKey('trc', receiptRedisKey('trc', key))).toBe(true);
  });
});

describe('a call read back from its receipt key (layout 4 stores no names)', () => {
  it('gives back the prefix and every component, whatever they hold (property)', () => {
    fc.assert(
      fc.property(
        fc.stringMatching(/^[A-Za-z0-9._~:/-]{1,12}$/),
        anyString,
        anyString,
        anyString,
        anyString,
        (prefix, t, r, tool, hash) => {
          const key = { tenantId: t, runId: r, toolName: tool, argsHash: hash };
          const redisKey = receiptRedisKey(prefix, key);
          expect(receiptRedisKeyParts(redisKey)).toEqual({ prefix, key });
          expect(receiptCallOf(redisKey, {})).toEqual(key);
        },
      ),
    );
  });

  it('prefers the names the hash stores, and names nothing for text that is not a receipt key', () => {
    const redisKey = receiptRedisKey('trc:a', { tenantId: 'acme {eu}', runId: 'r 1', toolName: 'mail', argsHash: 'h|1' });
    expect(receiptCallOf(redisKey, {})).toEqual({ tenantId: 'acme {eu}', runId: 'r 1', toolName: 'mail', argsHash: 'h|1' });
    const stored = { tenant: 't', run: 'r', tool: 'x', args_hash: 'y' };
    expect(receiptCallOf(redisKey, stored)).toEqual({ tenantId: 't', runId: 'r', toolName: 'x', argsHash: 'y' });
    expect(receiptRedisKeyParts('trc:run:{a|b}')).toBeUndefined();
    expect(receiptCallOf('trc:run:{a|b}', { tenant: 't' })).toEqual({ tenantId: 't', runId: '', toolName: '', argsHash: '' });
    expect(() => receiptRedisKeyParts('trc:rcpt:{a%zz|b}:c:d')).toThrow(RangeError);
    expect(receiptCallOf('trc:rcpt:{a%zz|b}:c:d', {})).toEqual({ tenantId: '', runId: '', toolName: '', argsHash: '' });
  });
});
