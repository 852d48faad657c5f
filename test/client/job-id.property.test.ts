import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { InvalidTurnIdError, turnJobId } from '../../src/client/index.js';

// Any JavaScript string, weighted towards the separators and what BullMQ refuses.
const anyChar = fc.oneof(
  fc.constantFrom('|', ':', '%', '0', '7', 'C', ' ', '\n', '\uD800'),
  fc.integer({ min: 0, max: 0xffff }).map((n) => String.fromCharCode(n)),
);
const name = fc.string({ unit: anyChar, minLength: 1, maxLength: 12 });
const triple = fc.record({ tenantId: name, runId: name, turnId: name });

describe('turnJobId', () => {
  it('is injective: distinct (tenant, run, turn) never share a job id', () => {
    fc.assert(
      fc.property(triple, triple, (a, b) => {
        const same = a.tenantId === b.tenantId && a.runId === b.runId && a.turnId === b.turnId;
        expect(turnJobId(a) === turnJobId(b)).toBe(same);
      }),
    );
  });

  it('is never an id BullMQ refuses: no colon, never a pure integer', () => {
    fc.assert(
      fc.property(triple, (t) => {
        const id = turnJobId(t);
        expect(id).not.toContain(':');
        expect(`${parseInt(id, 10)}`).not.toBe(id);
      }),
    );
    expect(turnJobId({ tenantId: '1', runId: '2', turnId: '3' })).toBe('turn|1|2|3');
    expect(turnJobId({ tenantId: 'a:b', runId: 'c|d', turnId: 'e f' })).toBe('turn|a%3Ab|c%7Cd|e%20f');
  });

  it('refuses an empty or non-string part with a typed error naming it', () => {
    expect(() => turnJobId({ tenantId: 'a', runId: '', turnId: 't' })).toThrow(InvalidTurnIdError);
    expect(() => turnJobId({ tenantId: 'a', runId: 'r', turnId: 7 as unknown as string })).toThrow(/turnId must be a non-empty string/);
  });
});
