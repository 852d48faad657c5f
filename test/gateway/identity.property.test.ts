/**
 * The gateway's pure parts, as properties: a call's identity is a function
 * of its content within its scope (key order and the request id do not
 * count; tenant, run, call id, tool and arguments all do, and no two of
 * them can be confused); a recorded upstream result comes back whole; a
 * session id says what it was made to say; an origin reads back as itself.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { canonicalJson } from '../../src/core/canonical-json.js';
import {
  gatewayCallIdentity,
  GATEWAY_CALL_ID_META,
  GATEWAY_RUN_ID_META,
  InvalidCallMetaError,
  type CallScope,
} from '../../src/gateway/scope.js';
import { ranResult, recordedMcpResult, upstreamResultOf } from '../../src/gateway/results.js';
import { newSessionId, readSessionId } from '../../src/gateway/sessions.js';
import { normalizedOrigin } from '../../src/http/origin.js';

// A small alphabet with the separators the encoding must keep apart, so two calls often share a field, or all of them.
const text = fc.string({ unit: fc.constantFrom('a', 'b', ':', '%', '|'), minLength: 1, maxLength: 3 });
const scope: fc.Arbitrary<CallScope> = fc.record({ kind: fc.constantFrom('session', 'stdio'), id: text });
const meta = fc.record({ [GATEWAY_RUN_ID_META]: text, [GATEWAY_CALL_ID_META]: text }, { requiredKeys: [] });
const args = fc.dictionary(text, fc.oneof(fc.integer({ min: 0, max: 2 }), text, fc.constant(null)), { maxKeys: 2 });
const call = fc.record({ tenant: text, scope, tool: text, args, meta });

type Call = typeof call extends fc.Arbitrary<infer T> ? T : never;
const identityOf = (c: Call) => gatewayCallIdentity(c.tenant, c.scope, c.tool, c.args, c.meta);

describe('a call’s identity', () => {
  it('is the same for the same content, whatever the order of its keys', () => {
    fc.assert(
      fc.property(call, (c) => {
        const reordered = Object.fromEntries(Object.entries(c.args).reverse());
        expect(gatewayCallIdentity(c.tenant, c.scope, c.tool, reordered, { ...c.meta })).toEqual(identityOf(c));
      }),
    );
  });

  it('differs for calls that differ in tenant, scope, run id, call id, tool or arguments', () => {
    fc.assert(
      fc.property(call, call, (a, b) => {
        const same = (x: Call, y: Call) => {
          const runOf = (c: Call) =>
            c.meta[GATEWAY_RUN_ID_META] === undefined ? ['scope', c.scope.kind, c.scope.id] : ['run', c.meta[GATEWAY_RUN_ID_META]];
          return (
            JSON.stringify([x.tenant, runOf(x), x.meta[GATEWAY_CALL_ID_META] ?? null, x.tool]) ===
            JSON.stringify([y.tenant, runOf(y), y.meta[GATEWAY_CALL_ID_META] ?? null, y.tool])
          );
        };
        const sameArgs = canonicalJson(a.args) === canonicalJson(b.args);
        const x = identityOf(a);
        const y = identityOf(b);
        const identical = x.tenantId === y.tenantId && x.runId === y.runId && x.turnId === y.turnId;
        expect(identical).toBe(same(a, b) && sameArgs);
      }),
      { numRuns: 2000 },
    );
  });

  it('changes when any one of tenant, scope, run id, call id, tool or arguments changes', () => {
    const field = fc.constantFrom('tenant', 'scope kind', 'scope id', 'run id', 'call id', 'tool', 'arguments');
    fc.assert(
      fc.property(call, field, text, (a, changed, other) => {
        const b = structuredClone(a);
        if (changed === 'tenant') b.tenant += other;
        if (changed === 'scope kind') b.scope = { ...b.scope, kind: b.scope.kind === 'session' ? 'stdio' : 'session' };
        if (changed === 'scope id') b.scope = { ...b.scope, id: b.scope.id + other };
        if (changed === 'run id') b.meta[GATEWAY_RUN_ID_META] = (b.meta[GATEWAY_RUN_ID_META] ?? '') + other;
        if (changed === 'call id') b.meta[GATEWAY_CALL_ID_META] = (b.meta[GATEWAY_CALL_ID_META] ?? '') + other;
        if (changed === 'tool') b.tool += other;
        if (changed === 'arguments') b.args = { ...b.args, [`${other}!`]: other };
        // A scope that a run id overrides does not count.
        fc.pre(!changed.startsWith('scope') || a.meta[GATEWAY_RUN_ID_META] === undefined);
        expect(identityOf(b)).not.toEqual(identityOf(a));
      }),
      { numRuns: 1000 },
    );
  });

  it('keeps a run id, a scope and a call id apart however they are spelt', () => {
    const session = { kind: 'session', id: 's' } as const;
    const ids = [
      gatewayCallIdentity('t', session, 'tool', {}),
      gatewayCallIdentity('t', { kind: 'stdio', id: 's' }, 'tool', {}),
      gatewayCallIdentity('t', session, 'tool', {}, { [GATEWAY_RUN_ID_META]: 's' }),
      gatewayCallIdentity('t', session, 'tool', {}, { [GATEWAY_RUN_ID_META]: 'session:s' }),
      gatewayCallIdentity('t', session, 'tool', {}, { [GATEWAY_RUN_ID_META]: 'a:call:b' }),
      gatewayCallIdentity('t', session, 'tool', {}, { [GATEWAY_RUN_ID_META]: 'a', [GATEWAY_CALL_ID_META]: 'b' }),
    ].map((identity) => identity.runId);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('refuses a run id or call id that is not a short string of well-formed text', () => {
    for (const bad of [7, '', 'x'.repeat(257), '\ud800', null, ['a']]) {
      expect(() => gatewayCallIdentity('t', { kind: 'session', id: 's' }, 'tool', {}, { [GATEWAY_RUN_ID_META]: bad })).toThrow(
        InvalidCallMetaError,
      );
      expect(() => gatewayCallIdentity('t', { kind: 'session', id: 's' }, 'tool', {}, { [GATEWAY_CALL_ID_META]: bad })).toThrow(
        InvalidCallMetaError,
      );
    }
  });
});

describe('a recorded upstream result', () => {
  const block = fc.oneof(
    fc.record({ type: fc.constant('text' as const), text: fc.string() }),
    fc.record({ type: fc.constant('image' as const), data: fc.base64String(), mimeType: fc.constantFrom('image/png', 'image/jpeg') }),
  );
  const result = fc.record(
    { content: fc.array(block, { maxLength: 4 }), structuredContent: fc.dictionary(fc.string(), fc.jsonValue(), { maxKeys: 3 }) },
    { requiredKeys: ['content'] },
  );

  it('comes back whole, block for block, with its structured content', () => {
    fc.assert(
      fc.property(result, (r) => {
        expect(upstreamResultOf(recordedMcpResult(r))).toEqual(JSON.parse(JSON.stringify(r)));
      }),
    );
  });

  it('is recorded within the size the gateway keeps: whole when it fits, else its text cut short, never its JSON', () => {
    const texts = fc.array(fc.string({ unit: 'grapheme', maxLength: 400 }), { minLength: 1, maxLength: 4 });
    fc.assert(
      fc.property(texts, fc.integer({ min: 1_000, max: 1_600 }), fc.boolean(), (parts, maxChars, withImage) => {
        const content = [
          ...parts.map((text) => ({ type: 'text' as const, text: text.repeat(4) })),
          ...(withImage ? [{ type: 'image' as const, data: 'AAAA', mimeType: 'image/png' }] : []),
        ];
        const r = { content, structuredContent: { n: 1 } };
        const recorded = recordedMcpResult(r, maxChars);
        expect(recorded.length).toBeLessThanOrEqual(maxChars);
        const back = upstreamResultOf(recorded)!;
        if (JSON.stringify({ 'bullmq-tool-receipts/mcp-result': 1, ...r }).length <= maxChars) {
          expect(back).toEqual(JSON.parse(JSON.stringify(r)));
          return;
        }
        expect(back.cut).toBe(true);
        const [block] = back.content as { type: string; text: string }[];
        const [kept, note] = block!.text.split('\n[cut: ');
        expect(
          parts
            .map((text) => text.repeat(4))
            .join('\n\n')
            .startsWith(kept!),
        ).toBe(true);
        expect(note).toMatch(/more than it keeps \(maxResultChars \d+\)/);
        // Answered as the text: no record's JSON reaches the model.
        const answer = ranResult(recorded, false, 'executed', false);
        expect((answer.content as { text: string }[])[0]!.text).toBe(block!.text);
        expect(ranResult(recorded, false, 'executed', true)).toMatchObject({ isError: true });
      }),
    );
  });

  it('is told apart from any other text, which is answered as that text', () => {
    fc.assert(
      fc.property(fc.string(), fc.boolean(), (other, isError) => {
        fc.pre(!other.startsWith('{"bullmq-tool-receipts/mcp-result":1,'));
        expect(upstreamResultOf(other)).toBeUndefined();
        expect(ranResult(other, isError, 'replayed', false)).toEqual({
          content: [{ type: 'text', text: other }],
          ...(isError ? { isError: true } : {}),
          _meta: { 'bullmq-tool-receipts/outcome': 'replayed' },
        });
      }),
    );
    // Cut to the size cap, for a tool whose clients expect structured content: an error result that says so.
    const cut = recordedMcpResult({ content: [{ type: 'text', text: 'x'.repeat(50) }], structuredContent: { n: 1 } }).slice(0, 40);
    expect(ranResult(cut, false, 'executed', true)).toMatchObject({
      isError: true,
      content: [{ text: expect.stringMatching(/^The tool ran, but its result was longer/) }],
    });
  });
});

describe('session ids and origins', () => {
  it('a session id says whether its client offered elicitation, and nothing else is taken for one', () => {
    fc.assert(
      fc.property(fc.boolean(), fc.string(), (elicits, other) => {
        expect(readSessionId(newSessionId(elicits))).toEqual({ elicits });
        fc.pre(!/^gw1\.[en]\./.test(other));
        expect(readSessionId(other)).toBeUndefined();
      }),
    );
    expect(newSessionId(true)).not.toBe(newSessionId(true));
  });

  it('an origin normalizes to itself, and anything with a path, a query or credentials is none', () => {
    fc.assert(
      fc.property(fc.webUrl({ withQueryParameters: false, withFragments: false }), (url) => {
        const normal = normalizedOrigin(url);
        if (normal !== undefined) expect(normalizedOrigin(normal)).toBe(normal);
      }),
    );
    expect(normalizedOrigin('HTTP://LocalHost:6274')).toBe('http://localhost:6274');
    for (const bad of ['http://localhost:6274/app', 'http://a@localhost', 'http://localhost/?q', 'file:///x', 'null', 'localhost:6274']) {
      expect(normalizedOrigin(bad), bad).toBeUndefined();
    }
  });
});
