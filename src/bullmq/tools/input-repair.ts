/**
 * A call's input that did not validate as sent: repaired where provable
 * (src/repair), reshaped for non-destructive tools, or refused in words the
 * model reads. Entered only when the schema's parse of the input fails.
 */
import { REJECTION_SUFFIX } from '../../core/tiers.js';
import { prepareToolInputAsync, type PreparedToolInput } from '../../repair/prepare.js';
import { repair } from '../../repair/repair.js';
import type { Reshaper } from '../../repair/reshaper.js';
import type { ValidationIssue } from '../../repair/types.js';
import type { AnyToolDefinition } from './define-tool.js';
import type { ToolCall } from '../../core/job-data.js';
import type { PreparedCall } from '../runtime.js';

/** How the wrapper treats input that does not validate as sent. */
export interface InputRepairOptions {
  /** Whether a tool counts as destructive after the deployment's own patterns. */
  readonly isDestructive: (tool: AnyToolDefinition) => boolean;
  /** Proposes corrected arguments (an LLM call, say); never consulted for destructive tools. */
  readonly reshaper?: Reshaper;
  /** Reshaper answers to try at most. Default 2. */
  readonly maxAttempts?: number;
  /** The model that wrote the calls, passed to the reshaper. */
  readonly backendModel?: string;
}

const describeIssues = (issues: readonly ValidationIssue[]) =>
  issues.map((i) => `${i.path.length ? i.path.join('.') : '(input)'}: ${i.message}`).join('; ');

/**
 * Validate a call's input the long way: provable corrections first (decoded
 * JSON strings, dropped null defaults, renamed aliases), then the optional
 * reshaper for non-destructive tools.
 *
 * The receipt identity is the digest of `rawInput`. For corrected input that
 * is the corrected raw form (not the schema's parsed output), so two
 * deliveries of the same malformed call share one receipt. For a reshaped
 * call it is the input as the model sent it: a reshaper may answer
 * differently each time, and keying on its answer would let a redelivery run
 * the effect again.
 */
export async function repairInput(
  call: ToolCall,
  tool: AnyToolDefinition,
  options: InputRepairOptions,
  abort: { readonly signal: AbortSignal },
): Promise<PreparedCall> {
  if (call.input === undefined) {
    return {
      ok: false,
      countsAsRejection: false,
      message: `Invalid input for ${tool.name}: the call has no input. Nothing was run; send the arguments as an object.`,
    };
  }
  const destructive = options.isDestructive(tool);
  const spec = { name: tool.name, schema: tool.input, aliases: tool.aliases, destructive };
  const prepared = await prepareToolInputAsync(call.input, spec);
  if (prepared.ok) return { ok: true, rawInput: prepared.input, args: prepared.parsed };
  if (prepared.reason === 'invalid' && options.reshaper) {
    // The signal is read only here: most calls never make one.
    const reshaped = await reshape(call, tool, options, abort.signal);
    if (reshaped) return reshaped;
  }
  return rejection(tool, prepared);
}

async function reshape(
  call: ToolCall,
  tool: AnyToolDefinition,
  options: InputRepairOptions,
  signal: AbortSignal,
): Promise<PreparedCall | undefined> {
  const message = { role: 'assistant' as const, content: [{ type: 'tool_use' as const, id: call.id, name: tool.name, input: call.input }] };
  const decision = await repair(message, new Map([[tool.name, tool.input]]), {
    reshaper: options.reshaper ?? null,
    maxAttempts: options.maxAttempts ?? 2,
    isDestructive: () => options.isDestructive(tool),
    aliases: tool.aliases ? new Map([[tool.name, tool.aliases]]) : undefined,
    backendModel: options.backendModel ?? null,
    signal,
  });
  if (decision.outcome !== 'fixed') return undefined;
  const block = decision.message.content[0];
  if (!block || block.type !== 'tool_use') return undefined;
  const again = await prepareToolInputAsync(block.input, { name: tool.name, schema: tool.input, aliases: tool.aliases });
  if (!again.ok) return undefined;
  return { ok: true, rawInput: call.input, args: again.parsed };
}

function rejection(tool: AnyToolDefinition, prepared: Extract<PreparedToolInput, { ok: false }>): PreparedCall {
  const issues = describeIssues(prepared.issues);
  switch (prepared.reason) {
    case 'refused_destructive':
      return {
        ok: false,
        countsAsRejection: true,
        message: `Refused: ${tool.name} is destructive and its input is invalid (${issues}); its arguments are never repaired on the model's behalf. ${REJECTION_SUFFIX}`,
      };
    case 'alias_conflict':
      return {
        ok: false,
        countsAsRejection: false,
        message: `Invalid input for ${tool.name}: ${issues}. Nothing was run; send each parameter once.`,
      };
    case 'invalid':
      return {
        ok: false,
        countsAsRejection: false,
        message: `Invalid input for ${tool.name}: ${issues}. Nothing was run; correct the arguments and call again.`,
      };
  }
}
