/**
 * mcpInputSchema: an MCP inputSchema as the zod schema the wrapper's
 * validation and repair read, with a full JSON Schema validator's verdict.
 */
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv';
import { describe, expect, it } from 'vitest';
import { prepareToolInput } from '../../src/repair/index.js';
import { McpToolSchemaError, mcpInputSchema } from '../../src/mcp/index.js';
import { strayKeys, withoutKeywords } from '../../src/mcp/input-schema.js';

const validators = new AjvJsonSchemaValidator();
const schemaOf = (json: Record<string, unknown>) => mcpInputSchema('t', json, validators);
const ok = (json: Record<string, unknown>, input: unknown) => schemaOf(json).safeParse(input).success;

describe('mcpInputSchema', () => {
  it('follows $ref into $defs and draft-07 definitions, recursively', () => {
    const refs = {
      type: 'object',
      $defs: { Node: { type: 'object', properties: { v: { type: 'number' }, next: { $ref: '#/$defs/Node' } }, required: ['v'] } },
      properties: { root: { $ref: '#/$defs/Node' } },
      required: ['root'],
    };
    expect(ok(refs, { root: { v: 1, next: { v: 2 } } })).toBe(true);
    expect(ok(refs, { root: { v: 1, next: { v: 'x' } } })).toBe(false);
    const draft7 = {
      $schema: 'http://json-schema.org/draft-07/schema#',
      type: 'object',
      definitions: { K: { enum: ['a', 'b'] } },
      properties: { k: { $ref: '#/definitions/K' } },
    };
    expect(ok(draft7, { k: 'a' })).toBe(true);
    expect(ok(draft7, { k: 'c' })).toBe(false);
  });

  it('keeps additionalProperties: false closed, a schema for extras checked, and no keyword open', () => {
    const closed = { type: 'object', properties: { a: { type: 'string' } }, additionalProperties: false };
    expect(ok(closed, { a: 'x' })).toBe(true);
    expect(ok(closed, { a: 'x', b: 1 })).toBe(false);
    const typed = { type: 'object', properties: { a: { type: 'string' } }, additionalProperties: { type: 'number' } };
    expect(ok(typed, { a: 'x', b: 1 })).toBe(true);
    expect(ok(typed, { a: 'x', b: 'y' })).toBe(false);
    expect(ok({ type: 'object', properties: {} }, { anything: [1] })).toBe(true);
  });

  it('checks enums, consts, nullables (type lists and anyOf null) and formats', () => {
    const s = {
      type: 'object',
      properties: {
        e: { enum: [1, 'two', null] },
        c: { const: 'x' },
        n: { type: ['string', 'null'] },
        m: { anyOf: [{ type: 'integer' }, { type: 'null' }] },
        mail: { type: 'string', format: 'email' },
        when: { type: 'string', format: 'date-time' },
        link: { type: 'string', format: 'uri' },
      },
    };
    expect(ok(s, { e: null, c: 'x', n: null, m: null, mail: 'a@b.co', when: '2026-01-01T00:00:00Z', link: 'https://example.com/x' })).toBe(
      true,
    );
    for (const bad of [{ e: 3 }, { c: 'y' }, { n: 1 }, { m: 1.5 }, { mail: 'nope' }, { when: 'yesterday' }, { link: 'not a uri' }]) {
      expect(ok(s, bad), JSON.stringify(bad)).toBe(false);
    }
  });

  it("enforces what zod's import leaves out: allOf, keywords without a type, if/then", () => {
    const allOf = { type: 'object', allOf: [{ properties: { a: { type: 'string' } }, required: ['a'] }] };
    expect(ok(allOf, { a: 'x' })).toBe(true);
    expect(ok(allOf, {})).toBe(false);
    const untyped = { type: 'object', properties: { p: { properties: { q: { type: 'string' } } } } };
    expect(ok(untyped, { p: { q: 1 } })).toBe(false);
    const conditional = {
      type: 'object',
      properties: { a: { type: 'string' } },
      if: { properties: { a: { const: 'x' } } },
      then: { required: ['b'] },
    };
    expect(ok(conditional, { a: 'y' })).toBe(true);
    expect(ok(conditional, { a: 'x' })).toBe(false);
    expect(ok(conditional, { a: 'x', b: 1 })).toBe(true);
  });

  it('hands the arguments on as they came: no default filled in, a property named "default" kept', () => {
    const s = {
      type: 'object',
      properties: { n: { type: 'integer', default: 3 }, default: { type: 'string', format: 'email' } },
      required: ['default'],
    };
    const parsed = schemaOf(s).safeParse({ default: 'a@b.co' });
    expect(parsed).toEqual({ success: true, data: { default: 'a@b.co' } });
    expect(ok(s, { default: 'nope' })).toBe(false);
    expect(withoutKeywords(s, new Set(['default', 'format']))).toEqual({
      type: 'object',
      properties: { n: { type: 'integer' }, default: { type: 'string' } },
      required: ['default'],
    });
    expect(s.properties.n.default).toBe(3); // the server's schema is not touched
  });

  it('lets the repair steps read the shape: a double-encoded object is decoded, a null optional dropped', () => {
    const s = {
      type: 'object',
      properties: { meta: { type: 'object', properties: { tag: { type: 'string' } } }, note: { type: 'string' } },
      required: ['meta'],
    };
    const prepared = prepareToolInput({ meta: '{"tag":"x"}', note: null }, { name: 't', schema: schemaOf(s) });
    expect(prepared).toMatchObject({ ok: true, input: { meta: { tag: 'x' } } });
    const destructive = prepareToolInput({ meta: 5 }, { name: 't', schema: schemaOf(s), destructive: true });
    expect(destructive).toMatchObject({ ok: false, reason: 'refused_destructive' });
  });

  it('refuses a schema no validator can compile, with a typed error', () => {
    expect(() => schemaOf({ type: 'object', properties: { a: { $ref: 'https://example.com/elsewhere.json' } } })).toThrow(
      McpToolSchemaError,
    );
    expect(() => schemaOf({ type: 'object', properties: { a: { type: 'strin' } } })).toThrow(/mcp|inputSchema/);
  });

  it('names the keys additionalProperties: false refuses, through properties, items, allOf and $ref', () => {
    const s = {
      type: 'object',
      $defs: { Tag: { type: 'object', properties: { name: { type: 'string' } }, additionalProperties: false } },
      properties: {
        meta: {
          type: 'object',
          properties: { tag: { $ref: '#/$defs/Tag' } },
          patternProperties: { '^x-': {} },
          additionalProperties: false,
        },
        list: { type: 'array', items: { type: 'object', properties: { id: { type: 'integer' } }, additionalProperties: false } },
        open: { type: 'object' },
      },
      allOf: [{ properties: { mode: { type: 'string' } }, additionalProperties: false }],
    };
    const input = {
      meta: { tag: { name: 'n', colour: 1 }, 'x-trace': 1, size: 2 },
      list: [{ id: 1 }, { id: 2, extra: true }],
      open: { anything: 1 },
      mode: 'r',
    };
    // allOf's own additionalProperties sees only its own properties, as JSON Schema says: meta, list and open are stray there.
    expect(strayKeys(s, input).sort()).toEqual(['list', 'list.1.extra', 'meta', 'meta.size', 'meta.tag.colour', 'open'].sort());
    expect(strayKeys({ type: 'object', properties: { a: {} } }, { a: 1, b: 2 })).toEqual([]);
    expect(strayKeys({ type: 'object', additionalProperties: false, properties: { a: {} } }, 'not an object')).toEqual([]);
    const closed = schemaOf({
      type: 'object',
      properties: { a: { type: 'string' } },
      additionalProperties: false,
      if: { required: ['a'] },
      then: {},
    });
    const parsed = closed.safeParse({ a: 'x', b: 1, c: 2 });
    expect(parsed.success).toBe(false);
    expect(parsed.error!.issues.map((i) => i.message).join()).toMatch(/not allowed here: "b", "c"/);
  });

  it('tells onRepairSkipped why a schema gets no repair (zod cannot import it), and still checks it in full', () => {
    const reasons: string[] = [];
    const conditional = {
      type: 'object',
      properties: { a: { type: 'string' } },
      if: { properties: { a: { const: 'x' } } },
      then: { required: ['b'] },
    };
    const schema = mcpInputSchema('t', conditional, validators, { onRepairSkipped: (reason) => reasons.push(reason) });
    expect(reasons).toHaveLength(1);
    expect(reasons[0]).toMatch(/if\/then\/else/);
    expect(schema.safeParse({ a: 'x' }).success).toBe(false);
    mcpInputSchema('t', { type: 'object', properties: { a: { type: 'string' } } }, validators, {
      onRepairSkipped: (reason) => reasons.push(reason),
    });
    expect(reasons).toHaveLength(1);
  });
});
