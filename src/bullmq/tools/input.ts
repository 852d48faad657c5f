/**
 * A call staged before anything is claimed: its tool looked up, its input
 * parsed as sent (and repaired the long way, in `./input-repair.ts`, only
 * when that fails or repair could change it), and its receipt key derived
 * from the input as sent.
 */
import type { z } from 'zod';
import { toolCallArgsHash, type ToolCallReceiptKey } from '../../core/identity.js';
import type { ToolCall } from '../../core/job-data.js';
import type { CallRuntime, JobScope, PreparedCall } from '../runtime.js';
import type { AnyToolDefinition } from './define-tool.js';
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

/** Whether every schema in `schema`'s tree is of a type whose valid input repair leaves as sent. */
function validAsSent(schema: z.ZodType): boolean {
  const seen = new Set<unknown>();
  const visit = (node: unknown): boolean => {
    if (seen.has(node)) return true;
    seen.add(node);
    const def = (node as { _zod: { def: Record<string, unknown> & { type: string } } })._zod.def;
    if (!AS_SENT_TYPES.has(def.type)) return false;
    for (const value of Object.values(def)) {
      const children = Array.isArray(value) ? value : isSchema(value) ? [value] : isPlain(value) ? Object.values(value) : [];
      if (!children.every((child) => !isSchema(child) || visit(child))) return false;
    }
    return true;
  };
  return visit(schema);
}

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
): (call: ToolCall, tool: AnyToolDefinition, abort: { readonly signal: AbortSignal }) => Promise<PreparedCall> {
  const asSent = new Set<AnyToolDefinition>();
  for (const tool of tools) if (Object.keys(tool.aliases ?? {}).length === 0 && validAsSent(tool.input)) asSent.add(tool);
  return async (call, tool, abort) => {
    if (call.input !== undefined && asSent.has(tool)) {
      try {
        const parsed = await tool.input.safeParseAsync(call.input);
        if (parsed.success) return { ok: true, rawInput: call.input, args: parsed.data };
      } catch {
        // A schema that throws is reported the long way, as an issue of the input.
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
 * Writes nothing: a rejection is recorded by the call when it runs.
 */
export async function stageCall(rt: CallRuntime, scope: JobScope, call: ToolCall): Promise<StagedCall> {
  const tool = rt.tools.get(call.name);
  if (!tool) return { kind: 'unknownTool' };
  const prepared = await rt.prepare(call, tool, scope.abort);
  if (!prepared.ok) return { kind: 'rejected', tool, prepared };
  const { tenantId, runId } = scope.data;
  const key = { tenantId, runId, toolName: tool.name, argsHash: await toolCallArgsHash(prepared.rawInput, rt.digest) };
  return { kind: 'ready', tool, args: prepared.args, key };
}
