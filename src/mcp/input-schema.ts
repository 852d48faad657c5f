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
 * A schema zod cannot import keeps the validator's verdict over a plain
 * object shape (no repair reads it); a schema the validator cannot compile
 * throws {@link McpToolSchemaError}.
 */
export function mcpInputSchema(tool: string, inputSchema: Record<string, unknown>, validators: jsonSchemaValidator): z.ZodType {
  let check: JsonSchemaValidator<unknown>;
  try {
    check = validators.getValidator(inputSchema as JsonSchemaType);
  } catch (cause) {
    throw new McpToolSchemaError(tool, cause instanceof Error ? cause.message : String(cause), { cause });
  }
  let shape: z.ZodType;
  try {
    shape = z.fromJSONSchema(withoutKeywords(inputSchema, DROPPED) as Parameters<typeof z.fromJSONSchema>[0]);
  } catch {
    shape = z.looseObject({});
  }
  return shape.superRefine((value, ctx) => {
    const verdict = check(value);
    if (!verdict.valid) ctx.addIssue({ code: 'custom', message: verdict.errorMessage ?? 'does not match the tool\'s inputSchema' });
  });
}

const DROPPED: ReadonlySet<string> = new Set(['default', 'format']);

/** Keywords whose value is a map from names to subschemas. */
const SCHEMA_MAPS = ['properties', 'patternProperties', '$defs', 'definitions', 'dependentSchemas'];
/** Keywords whose value is a subschema or a list of them. */
const SUBSCHEMAS = [
  'items', 'prefixItems', 'additionalItems', 'additionalProperties', 'unevaluatedItems', 'unevaluatedProperties',
  'contains', 'propertyNames', 'not', 'if', 'then', 'else', 'allOf', 'anyOf', 'oneOf',
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
      copy = Array.isArray(value) ? value.map((sub) => withoutKeywords(sub, dropped, depth + 1)) : withoutKeywords(value, dropped, depth + 1);
    }
    Object.defineProperty(out, key, { value: copy, enumerable: true, writable: true, configurable: true });
  }
  return out;
}
