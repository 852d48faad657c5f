/**
 * modelToolNames as properties: whatever names a server lists (they are
 * its text, and may be built to collide), every name offered is one model
 * APIs take, no two are alike, safe names are kept, and the mapping is
 * deterministic.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { modelToolNames } from '../../src/mcp/index.js';

const MODEL_SAFE = /^[A-Za-z0-9_-]{1,64}$/;
const safe = fc.stringMatching(/^[A-Za-z0-9_-]{1,64}$/);
const odd = fc.oneof(
  fc.string({ maxLength: 100 }),
  fc.string({ unit: 'grapheme', maxLength: 20 }),
  fc.stringMatching(/^[a-z]{1,8}\.[a-z]{1,8}$/),
  fc.stringMatching(/^[A-Za-z0-9_-]{65,90}$/),
);
const prefix = fc.stringMatching(/^[A-Za-z0-9_-]{0,40}$/);
const names = fc.uniqueArray(fc.oneof(safe, odd), { maxLength: 30 });

describe('modelToolNames', () => {
  it('every name is model-safe and unique; a safe name is kept; the same list gives the same names', () => {
    fc.assert(
      fc.property(names, prefix, (listed, p) => {
        const mapped = modelToolNames(listed, p);
        expect(mapped).toHaveLength(listed.length);
        for (const name of mapped) expect(name).toMatch(MODEL_SAFE);
        expect(new Set(mapped).size).toBe(mapped.length);
        listed.forEach((name, i) => {
          if (MODEL_SAFE.test(`${p}${name}`)) expect(mapped[i]).toBe(`${p}${name}`);
          else expect(mapped[i]!.startsWith(p.slice(0, 55))).toBe(true);
        });
        expect(modelToolNames(listed, p)).toEqual(mapped);
      }),
    );
  });

  it('a list spelt to take mapped names (each mapped name listed as a safe one) still gets unique names, the safe ones kept', () => {
    fc.assert(
      fc.property(fc.uniqueArray(odd, { minLength: 1, maxLength: 10 }), prefix, (unsafe, p) => {
        const firstChoice = modelToolNames(unsafe, p).map((n) => n.slice(p.length));
        const hostile = [...unsafe, ...firstChoice.filter((n) => !unsafe.includes(n))];
        const mapped = modelToolNames(hostile, p);
        expect(new Set(mapped).size).toBe(mapped.length);
        for (const name of mapped) expect(name).toMatch(MODEL_SAFE);
        hostile.slice(unsafe.length).forEach((name, i) => expect(mapped[unsafe.length + i]).toBe(`${p}${name}`));
      }),
    );
  });

  it('maps by the rule docs/mcp.md states', () => {
    expect(modelToolNames(['files.read', 'files_read'])).toEqual(['files_read_601e4eb6', 'files_read']);
    expect(modelToolNames(['files.read', 'files_read_601e4eb6'])).toEqual(['files_read_6d8134c0', 'files_read_601e4eb6']);
    const long = 'x'.repeat(70);
    expect(modelToolNames([long], 'p_')[0]).toMatch(/^p_x{53}_[0-9a-f]{8}$/);
  });
});
