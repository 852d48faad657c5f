/**
 * Reading a receipt's Redis key back into the call it names.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { InvalidReceiptKeyError } from '../../src/cli/errors.js';
import { parseReceiptRedisKey } from '../../src/cli/receipt-key.js';
import { receiptRedisKey } from '../../src/redis/keys.js';

const anyChar = fc.oneof(
  fc.constantFrom('{', '}', ':', '|', '%', ' ', '\n', '\0', '\uD800', '\uDC00', '😀', 'é'),
  fc.string({ unit: 'binary', minLength: 1, maxLength: 1 }),
  fc.integer({ min: 0, max: 0xffff }).map((n) => String.fromCharCode(n)),
);
const anyString = fc.string({ unit: anyChar, maxLength: 16 });
const prefixChar = fc.constantFrom(...'abcXYZ019._~:/-'.split(''));
const anyPrefix = fc.string({ unit: prefixChar, minLength: 1, maxLength: 12 });

describe('parseReceiptRedisKey', () => {
  it('inverts receiptRedisKey for any prefix and any four components', () => {
    fc.assert(
      fc.property(anyPrefix, anyString, anyString, anyString, anyString, (prefix, tenantId, runId, toolName, argsHash) => {
        const key = { tenantId, runId, toolName, argsHash };
        expect(parseReceiptRedisKey(receiptRedisKey(prefix, key))).toEqual({ prefix, key });
      }),
      { numRuns: 500 },
    );
  });

  it('reads a prefix that itself holds colons or the word rcpt', () => {
    const key = { tenantId: 'acme {eu}', runId: 'run:7|b', toolName: 'send email\n', argsHash: 'abc' };
    for (const prefix of ['trc', 'app:prod', 'x:rcpt:y']) {
      expect(parseReceiptRedisKey(receiptRedisKey(prefix, key), prefix)).toEqual({ prefix, key });
    }
  });

  it.each([
    ['not a key at all', 'hello'],
    ['a run index key', 'trc:run:{a|b}'],
    ['a breaker key', 'trc:brk:{a|b}'],
    ['a missing args hash', 'trc:rcpt:{a|b}:tool'],
    ['an extra component', 'trc:rcpt:{a|b}:tool:hash:more'],
    ['no run in the hash tag', 'trc:rcpt:{a}:tool:hash'],
    ['a raw space', 'trc:rcpt:{a b|c}:tool:hash'],
    ['lower-case hex', 'trc:rcpt:{a%7bb|c}:tool:hash'],
    ['an escaped letter', 'trc:rcpt:{%41|c}:tool:hash'],
    ['a broken escape', 'trc:rcpt:{a%4|c}:tool:hash'],
    ['an overlong UTF-8 form', 'trc:rcpt:{%C0%80|c}:tool:hash'],
    ['a code point beyond Unicode', 'trc:rcpt:{%F7%BF%BF%BF|c}:tool:hash'],
    ['a brace in the prefix', 'a{b:rcpt:{a|b}:tool:hash'],
  ])('refuses %s', (_what, text) => {
    expect(() => parseReceiptRedisKey(text)).toThrow(InvalidReceiptKeyError);
  });

  it('refuses a key under another prefix than the one in use, and says which', () => {
    const text = receiptRedisKey('app', { tenantId: 't', runId: 'r', toolName: 'x', argsHash: 'h' });
    let error: unknown;
    try {
      parseReceiptRedisKey(text, 'trc');
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(InvalidReceiptKeyError);
    expect((error as InvalidReceiptKeyError).code).toBe('cli.invalid_receipt_key');
    expect((error as Error).message).toContain('--prefix app');
  });
});
