import { describe, expect, it } from 'vitest';
import { newEpoch } from '../../src/redis/epochs.js';

describe('newEpoch', () => {
  it('gives 16 base64url characters (12 random bytes), never the same twice, across many refills of its pool', () => {
    const epochs = Array.from({ length: 2_000 }, () => newEpoch());
    for (const epoch of epochs) expect(epoch).toMatch(/^[A-Za-z0-9_-]{16}$/);
    expect(new Set(epochs).size).toBe(epochs.length);
  });
});
