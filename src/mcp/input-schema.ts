/**
 * An MCP tool's JSON `inputSchema` as a zod schema the wrapper validates and
 * repairs with.
 */
import { z } from 'zod';
import type { JsonSchemaType, JsonSchemaValidator, jsonSchemaValidator } from '@modelcontextprotocol/sdk/validation';
import { McpToolSchemaError } from './errors.js';

/**
 * An MCP tool's `inputSchema` as a zod 4 schema the wrapper's validation and
 * safe repair read unchanged.
 *
 * Two parts, each doing what it is good at:
 * - the shape comes from zod 4's own JSON Schema import (`z.fromJSONSchema`),
 *   so the repair steps that read a zod schema (decoding double-encoded
 *   arguments, aliases, dropping `null`s of optional parameters) see the
 *   server's objects, arrays, enums, nullables and `$ref`s. `default` and
 *   `format` are left out of this part: the arguments the server receives
 *   are then exactly the model's (repaired) arguments, with no default
 *   filled in on its behalf, and a format is judged once, below;
 * - the verdict comes from a full JSON Schema validator (by default the MCP
 *   SDK's own, Ajv with formats, which the SDK already uses on tool output),
 *   run as a refinement of that schema: what zod's import does not model
 *   (`allOf`, keywords on a schema without `type`, `dependentRequired`,
 *   formats) is still enforced before anything is claimed.
 *
 * A schema zod cannot import (`if`/`then`/`else`, `not`, `dependentSchemas`,
 * `dependentRequired`, `unevaluatedProperties`, …) keeps the validator's
 * verdict over a plain object shape: no repair step that reads the schema
 * (decoding, dropping `null`s) applies to it, and `onRepairSkipped` is told
 * why. A schema the validator cannot compile throws {@link McpToolSchemaError}.
 *
 * The refusal the model reads is the validator's, and when the arguments
 * carry keys an `additionalProperties: false` does not allow, it names them.
 */
export function mcpInputSchema(
  tool: string,
  inputSchema: Record<string, unknown>,
  validators: jsonSchemaValidator,
  options: { readonly onRepairSkipped?: (reason: string) => void } = {},
): z.ZodType {
  let check: JsonSchemaValidator<unknown>;
  try {
    check = validators.getValidator(inputSchema as JsonSchemaType);
  } catch (cause) {
    throw new McpToolSchemaError(tool, cause instanceof Error ? cause.message : String(cause), { cause });
  }
  let shape: z.ZodType;
  try {
    shape = z.fromJSONSchema(withoutKeywords(inputSchema, DROPPED) as Parameters<typeof z.fromJSONSchema>[0]);
  } catch (cause) {
    shape = z.looseObject({});
    options.onRepairSkipped?.(cause instanceof Error ? cause.message : String(cause));
  }
  return shape.superRefine((value, ctx) => {
    const verdict = check(value);
    if (verdict.valid) return;
    const stray = strayKeys(inputSchema, value);
    const named =
      stray.length === 0
        ? ''
        : `; not allowed here: ${stray
            .slice(0, MAX_STRAY_NAMED)
            .map((k) => JSON.stringify(k))
            .join(', ')}${stray.length > MAX_STRAY_NAMED ? ` and ${stray.length - MAX_STRAY_NAMED} more` : ''}`;
    ctx.addIssue({ code: 'custom', message: `${verdict.errorMessage ?? "does not match the tool's inputSchema"}${named}` });
  });
}

/** Stray keys named in one refusal, at most (the model wrote them, and a long list helps nobody). */
const MAX_STRAY_NAMED = 10;
const MAX_KEY_SHOWN = 64;

/**
 * The keys of `value` that an `additionalProperties: false` in `schema`
 * refuses, as dotted paths (`extra`, `meta.colour`, `items.0.x`): followed
 * through `properties`, `items`, `allOf` and local `$ref`s, as far as the
 * value goes. A key is stray for a schema that neither lists it in
 * `properties` nor matches it with a `patternProperties` pattern. Only for
 * naming keys in a refusal: the validator's verdict stands whatever this
 * finds.
 */
export function strayKeys(schema: unknown, value: unknown): string[] {
  const found = new Set<string>();
  const walk = (node: unknown, at: unknown, path: string, depth: number): void => {
    if (depth > 32 || found.size >= MAX_STRAY_NAMED + 1 || typeof node !== 'object' || node === null || Array.isArray(node)) return;
    const s = node as Record<string, unknown>;
    if (typeof s.$ref === 'string') walk(localRef(schema, s.$ref), at, path, depth + 1);
    if (Array.isArray(s.allOf)) for (const sub of s.allOf) walk(sub, at, path, depth + 1);
    if (Array.isArray(at)) {
      if (isSchema(s.items)) at.slice(0, 100).forEach((item, i) => walk(s.items, item, `${path}${i}.`, depth + 1));
      return;
    }
    if (typeof at !== 'object' || at === null) return;
    const properties = isSchema(s.properties) ? (s.properties as Record<string, unknown>) : {};
    const patterns = isSchema(s.patternProperties) ? Object.keys(s.patternProperties as object).map(safeRegExp) : [];
    for (const [key, child] of Object.entries(at)) {
      if (Object.hasOwn(properties, key)) walk(properties[key], child, `${path}${key}.`, depth + 1);
      else if (s.additionalProperties === false && !patterns.some((p) => p?.test(key))) found.add(`${path}${key}`.slice(0, MAX_KEY_SHOWN));
    }
  };
  walk(schema, value, '', 0);
  return [...found];
}

const isSchema = (v: unknown): boolean => typeof v === 'object' && v !== null && !Array.isArray(v);

/** A `#/…` JSON pointer into the root schema, or `undefined` for any other `$ref`. */
function localRef(root: unknown, ref: string): unknown {
  if (!ref.startsWith('#/')) return undefined;
  let node: unknown = root;
  for (const raw of ref.slice(2).split('/')) {
    const part = decodeURIComponent(raw).replace(/~1/g, '/').replace(/~0/g, '~');
    if (!isSchema(node) || !Object.hasOwn(node as object, part)) return undefined;
    node = (node as Record<string, unknown>)[part];
  }
  return node;
}

function safeRegExp(pattern: string): RegExp | undefined {
  try {
    return new RegExp(pattern, 'u');
  } catch {
    return undefined;
  }
}

const DROPPED: ReadonlySet<string> = new Set(['default', 'format']);

/** Keywords whose value is a map from names to subschemas. */
const SCHEMA_MAPS = ['properties', 'patternProperties', '$defs', 'definitions', 'dependentSchemas'];
/** Keywords whose value is a subschema or a list of them. */
const SUBSCHEMAS = [
  'items',
  'prefixItems',
  'additionalItems',
  'additionalProperties',
  'unevaluatedItems',
  'unevaluatedProperties',
  'contains',
  'propertyNames',
  'not',
  'if',
  'then',
  'else',
  'allOf',
  'anyOf',
  'oneOf',
];

/**
 * A copy of a JSON Schema without the given keywords in any of its schemas.
 * Only schema positions are walked: a property named `default` stays.
 */
export function withoutKeywords(schema: unknown, dropped: ReadonlySet<string>, depth = 0): unknown {
  if (typeof schema !== 'object' || schema === null || Array.isArray(schema) || depth > 64) return schema;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(schema)) {
    if (dropped.has(key)) continue;
    let copy: unknown = value;
    if (SCHEMA_MAPS.includes(key) && typeof value === 'object' && value !== null && !Array.isArray(value)) {
      copy = Object.fromEntries(Object.entries(value).map(([name, sub]) => [name, withoutKeywords(sub, dropped, depth + 1)]));
    } else if (SUBSCHEMAS.includes(key)) {
      copy = Array.isArray(value)
        ? value.map((sub) => withoutKeywords(sub, dropped, depth + 1))
        : withoutKeywords(value, dropped, depth + 1);
    }
    Object.defineProperty(out, key, { value: copy, enumerable: true, writable: true, configurable: true });
  }
  return out;
}
