/**
 * resolveMcpEffect: MCP's annotation defaults, and the team's overrides,
 * which no annotation can loosen.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { resolveMcpEffect, type McpEffectOverride } from '../../src/mcp/index.js';
import type { ToolAnnotations } from '../../src/bullmq/index.js';

const hint = fc.option(fc.boolean(), { nil: undefined });
const annotations: fc.Arbitrary<ToolAnnotations | undefined> = fc.option(
  fc.record({ readOnlyHint: hint, destructiveHint: hint, idempotentHint: hint, openWorldHint: hint }, { requiredKeys: [] }),
  { nil: undefined },
);
const override: fc.Arbitrary<McpEffectOverride> = fc.record(
  { effect: fc.constantFrom('read-only', 'idempotent', 'opaque', 'keyed' as const), destructive: fc.boolean() },
  { requiredKeys: [] },
);

describe('resolveMcpEffect', () => {
  it('reads annotations with MCP defaults', () => {
    const table: Array<[ToolAnnotations | undefined, string, boolean]> = [
      [undefined, 'opaque', true],
      [{}, 'opaque', true],
      [{ destructiveHint: false }, 'opaque', false],
      [{ idempotentHint: true }, 'idempotent', true],
      [{ idempotentHint: true, destructiveHint: false }, 'idempotent', false],
      [{ readOnlyHint: true }, 'read-only', false],
      [{ readOnlyHint: true, destructiveHint: true, idempotentHint: false }, 'read-only', false],
      [{ readOnlyHint: false, idempotentHint: false, destructiveHint: false }, 'opaque', false],
      [{ openWorldHint: false }, 'opaque', true],
    ];
    for (const [hints, effectClass, destructive] of table) {
      expect(resolveMcpEffect(hints), JSON.stringify(hints)).toMatchObject({ effectClass, destructive });
    }
    expect(resolveMcpEffect({ idempotentHint: true })).toMatchObject({ effect: 'resumable', idempotent: true, readOnly: false });
    expect(resolveMcpEffect({ readOnlyHint: true })).toMatchObject({ effect: 'opaque', idempotent: true, readOnly: true });
  });

  it('a field the team set is the same whatever the server annotates', () => {
    fc.assert(
      fc.property(override, annotations, annotations, fc.boolean(), (o, a, b, trust) => {
        const x = resolveMcpEffect(a, o, trust);
        const y = resolveMcpEffect(b, o, trust);
        if (o.effect !== undefined) {
          expect(x.effectClass).toBe(o.effect);
          expect([x.effect, x.readOnly, x.idempotent]).toEqual([y.effect, y.readOnly, y.idempotent]);
        }
        if (o.destructive !== undefined) expect(x.destructive).toBe(o.destructive);
      }),
    );
  });

  it('annotations only ever add care to the most careful reading, never take it away when not trusted', () => {
    fc.assert(
      fc.property(annotations, override, (a, o) => {
        const distrusted = resolveMcpEffect(a, o, false);
        expect(distrusted).toEqual(resolveMcpEffect(undefined, o, true));
        if (o.effect === undefined) expect(distrusted.effectClass).toBe('opaque');
        if (o.destructive === undefined && o.effect !== 'read-only') expect(distrusted.destructive).toBe(true);
      }),
    );
  });

  it('the flags agree with each other', () => {
    fc.assert(
      fc.property(annotations, override, fc.boolean(), (a, o, trust) => {
        const r = resolveMcpEffect(a, o, trust);
        expect(r.readOnly).toBe(r.effectClass === 'read-only');
        expect(r.effect).toBe(r.effectClass === 'idempotent' ? 'resumable' : r.effectClass === 'keyed' ? 'keyed' : 'opaque');
        if (r.readOnly || r.effectClass === 'idempotent') expect(r.idempotent).toBe(true);
        if (r.readOnly && o.destructive === undefined) expect(r.destructive).toBe(false);
      }),
    );
  });
});
