import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { epochCheck } from '../../src/redis/receipts/transitions/claim.js';
import { epochOrigin, newEpoch } from '../../src/redis/receipts/transitions/epochs.js';

const KEY = 'trc:rcpt:{acme|run-42}:send_email:9f2c';

describe('newEpoch', () => {
  it('gives 16 base64url characters (12 random bytes) and a 4-character check, never the same twice, across many refills of its pool', () => {
    const epochs = Array.from({ length: 2_000 }, () => newEpoch(KEY));
    for (const epoch of epochs) expect(epoch).toMatch(/^[A-Za-z0-9_-]{20}$/);
    expect(new Set(epochs).size).toBe(epochs.length);
  });
});

describe('epochCheck', () => {
  // Epochs outlive the release that minted them: every release must compute the same check. These answers were
  // worked out apart from the code (FNV-1a over the UTF-16 code units of key, newline, random part; folded; base64url).
  it.each([
    [KEY, 'AAAAAAAAAAAAAAAA', 'qJ-C'],
    ['', '', 'DGzS'],
    ['trc:rcpt:{t|r}:tool:ab', 'Zm9vYmFyLWJhei1x', 'uooW'],
    ['k\u00e9y\u{1F600}', 'r', '9vL9'],
  ])('gives the check of key %j and random part %j as it always has', (redisKey, random, check) => {
    expect(epochCheck(redisKey, random)).toBe(check);
  });
});

describe('epochOrigin', () => {
  it('knows an epoch minted for the key, and refuses it for another key', () => {
    const epoch = newEpoch(KEY);
    expect(epochOrigin(epoch, KEY)).toBe('this-receipt');
    expect(epochOrigin(epoch, `${KEY}0`)).toBe('not-this-receipt');
  });

  // A typo passes the 24-bit check with odds of 1 in 16.7 million: 100 runs fail once in about 170,000 test runs.
  it('takes a mistyped character for an epoch never minted for the key', () => {
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
    fc.assert(
      fc.property(fc.nat(19), fc.nat(63), (at, pick) => {
        const epoch = newEpoch(KEY);
        const typed = epoch.slice(0, at) + alphabet[pick]! + epoch.slice(at + 1);
        fc.pre(typed !== epoch);
        expect(epochOrigin(typed, KEY)).toBe('not-this-receipt');
      }),
      { numRuns: 100 },
    );
  });

  it('cannot tell for an epoch of the older, unchecked form; anything else is not an epoch of the key', () => {
    expect(epochOrigin('AAAAAAAAAAAAAAAA', KEY)).toBe('unknown');
    for (const text of ['', 'short', 'has space in it xxxx', `${newEpoch(KEY)}x`]) expect(epochOrigin(text, KEY)).toBe('not-this-receipt');
  });
});
