/**
 * A call staged before anything is claimed: its tool looked up, its input
 * parsed as sent (and repaired the long way, in `./input-repair.ts`, only
 * when that fails or repair could change it), and its receipt key derived
 * from the input as sent.
 */
import type { z } from 'zod';
import { CanonicalJsonError } from '../../core/canonical-json.js';
import { argsDigest, type ToolCallReceiptKey } from '../../core/identity.js';
import type { ToolCall } from '../../core/job-data.js';
import type { CallRuntime, JobScope, PreparedCall } from '../runtime.js';
import type { AnyToolDefinition } from './define-tool.js';
import { asSentence } from './failure-text.js';
import { repairInput, type InputRepairOptions } from './input-repair.js';

export type { InputRepairOptions } from './input-repair.js';

/**
 * zod types whose valid input repair never changes: no alias, no decoded
 * string, no dropped null can make such an input other than it was sent
 * (a string where only an object or array belongs, or a null where only
 * absence does, fails their parse). Wrappers that can accept more than they
 * show (`catch`, `pipe`, `transform`, `lazy`, ...) are not among them.
 */
const AS_SENT_TYPES: ReadonlySet<string> = new Set([
  'string',
  'number',
  'int',
  'boolean',
  'bigint',
  'null',
  'undefined',
  'any',
  'unknown',
  'enum',
  'literal',
  'template_literal',
  'object',
  'record',
  'array',
  'tuple',
  'union',
  'optional',
  'nullable',
  'default',
  'readonly',
  'nonoptional',
]);

/** A zod schema's definition, as far as the checks below read it. */
type SchemaDef = Record<string, unknown> & { readonly type: string; readonly checks?: readonly unknown[] };

/** Whether every schema in `schema`'s tree satisfies `test` (a schema met twice is tested once). */
function everySchema(schema: z.ZodType, test: (def: SchemaDef) => boolean): boolean {
  const seen = new Set<unknown>();
  const visit = (node: unknown): boolean => {
    if (seen.has(node)) return true;
    seen.add(node);
    const def = (node as { _zod: { def: SchemaDef } })._zod.def;
    if (!test(def)) return false;
    for (const value of Object.values(def)) {
      const children = Array.isArray(value) ? value : isSchema(value) ? [value] : isPlain(value) ? Object.values(value) : [];
      if (!children.every((child) => !isSchema(child) || visit(child))) return false;
    }
    return true;
  };
  return visit(schema);
}

/** Whether every schema in `schema`'s tree is of a type whose valid input repair leaves as sent. */
const validAsSent = (schema: z.ZodType): boolean => everySchema(schema, (def) => AS_SENT_TYPES.has(def.type));

/**
 * Whether a schema valid as sent (see {@link validAsSent}) parses without
 * awaiting: none of its checks is the user's own function (`refine`,
 * `superRefine`, `check`), the only place such a tree can return a promise.
 * zod's synchronous parse then gives what its asynchronous one would, without
 * the promises the latter makes for every call.
 */
const parsesSynchronously = (schema: z.ZodType): boolean =>
  everySchema(schema, (def) =>
    (def.checks ?? []).every((check) => (check as { _zod: { def: { check: string } } })._zod.def.check !== 'custom'),
  );

const isSchema = (value: unknown): boolean => typeof value === 'object' && value !== null && '_zod' in value;
const isPlain = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && Object.getPrototypeOf(value) === Object.prototype;

/**
 * The function that prepares each call's input, made once per processor.
 * The input is parsed as sent; when that succeeds and repair could not have
 * changed it (the tool has no aliases and its schema is of plain types, see
 * {@link validAsSent}), the call runs with it, as the long way would have
 * had it. Otherwise, and whenever the parse fails, the long way
 * (`repairInput`) decides.
 */
export function inputPreparer(
  options: InputRepairOptions,
  tools: Iterable<AnyToolDefinition>,
): (call: ToolCall, tool: AnyToolDefinition, abort: { readonly signal: AbortSignal }) => PreparedCall | Promise<PreparedCall> {
  // How each tool's input is parsed as sent, decided once: not at all (the long way), or with zod's sync or async parse.
  const asSent = new Map<AnyToolDefinition, 'sync' | 'async'>();
  for (const tool of tools) {
    if (Object.keys(tool.aliases ?? {}).length > 0 || !validAsSent(tool.input)) continue;
    asSent.set(tool, parsesSynchronously(tool.input) ? 'sync' : 'async');
  }
  const parsedAsSent = (call: ToolCall, parsed: z.ZodSafeParseResult<unknown>): PreparedCall | undefined =>
    parsed.success ? { ok: true, rawInput: call.input, args: parsed.data } : undefined;
  const viaAsyncParse = async (call: ToolCall, tool: AnyToolDefinition, abort: { readonly signal: AbortSignal }) => {
    try {
      const prepared = parsedAsSent(call, await tool.input.safeParseAsync(call.input));
      if (prepared) return prepared;
    } catch {
      // A schema that throws is reported the long way, as an issue of the input.
    }
    return repairInput(call, tool, options, abort);
  };
  return (call, tool, abort) => {
    const parse = call.input === undefined ? undefined : asSent.get(tool);
    if (parse === 'async') return viaAsyncParse(call, tool, abort);
    if (parse === 'sync') {
      try {
        const prepared = parsedAsSent(call, tool.input.safeParse(call.input));
        if (prepared) return prepared;
      } catch {
        // As above: a schema that throws is reported the long way.
      }
    }
    return repairInput(call, tool, options, abort);
  };
}

/** A call looked up and prepared: what it will run with, or why it will not run. */
export type StagedCall =
  | { readonly kind: 'unknownTool' }
  | { readonly kind: 'rejected'; readonly tool: AnyToolDefinition; readonly prepared: Extract<PreparedCall, { ok: false }> }
  | { readonly kind: 'ready'; readonly tool: AnyToolDefinition; readonly args: unknown; readonly key: ToolCallReceiptKey };

/**
 * Looks the call's tool up, prepares its input and derives its receipt key.
 * Writes nothing: a rejection is recorded by the call when it runs. The
 * staged call itself, not a promise of it, when nothing on the way is a
 * promise (an input that parses as sent, the default digest): most calls.
 */
export function stageCall(runtime: CallRuntime, scope: JobScope, call: ToolCall): StagedCall | Promise<StagedCall> {
  const tool = runtime.tools.get(call.name);
  if (!tool) return UNKNOWN_TOOL;
  const preparing = runtime.prepare(call, tool, scope.abort);
  if (preparing instanceof Promise) return preparing.then((prepared) => keyed(runtime, scope, tool, prepared));
  return keyed(runtime, scope, tool, preparing);
}

/** What a call of a tool the worker does not have stages as (one object: it carries nothing of the call). */
const UNKNOWN_TOOL: StagedCall = { kind: 'unknownTool' };

/** A prepared call with its receipt key, from its input as sent. */
function keyed(runtime: CallRuntime, scope: JobScope, tool: AnyToolDefinition, prepared: PreparedCall): StagedCall | Promise<StagedCall> {
  if (!prepared.ok) return { kind: 'rejected', tool, prepared };
  let digested: string | Promise<string>;
  try {
    digested = argsDigest(prepared.rawInput, runtime.digest);
  } catch (error) {
    return tooDeep(tool, error);
  }
  if (typeof digested === 'string') return ready(scope, tool, prepared.args, digested);
  return digested.then(
    (argsHash) => ready(scope, tool, prepared.args, argsHash),
    (error: unknown) => tooDeep(tool, error),
  );
}

/** A call ready to claim: its tool, its arguments and its receipt key. */
function ready(scope: JobScope, tool: AnyToolDefinition, args: unknown, argsHash: string): StagedCall {
  const { tenantId, runId } = scope.data;
  return { kind: 'ready', tool, args, key: { tenantId, runId, toolName: tool.name, argsHash } };
}

/**
 * Arguments JSON can carry that have no canonical form (nested past its
 * depth limit): this call is refused, not the turn. Any other error is thrown.
 */
function tooDeep(tool: AnyToolDefinition, error: unknown): StagedCall {
  if (!(error instanceof CanonicalJsonError)) throw error;
  const message = `Invalid input for ${tool.name}: ${asSentence(error.message)} Nothing was run; send flatter arguments.`;
  return { kind: 'rejected', tool, prepared: { ok: false, countsAsRejection: false, message } };
}
