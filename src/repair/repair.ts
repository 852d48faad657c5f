/**
 * The reshaper loop: asks for corrected arguments, guards each answer, and
 * says how the repair ended.
 */
import type { ParamAliases } from './aliases.js';
import { guardReshaped } from './guard.js';
import { normalizeMessageInputs } from './normalize.js';
import type { Reshaper } from './reshaper.js';
import { settleOrAbort } from './settle.js';
import { isRecord, type AssistantMessage, type ContentBlock, type ToolSchemas, type ValidationIssue } from './types.js';
import { validateMessageAsync, zodToolUseValidator, type ToolUseValidator } from './validator.js';

/** The five ways a repair can end. */
export type RepairOutcome = 'fixed' | 'failed' | 'refused' | 'refused_destructive' | 'cancelled';

/** What went wrong with one reshaper attempt. */
export type RepairAttemptFailure =
  | { attempt: number; kind: 'threw'; error: unknown }
  | { attempt: number; kind: 'reshaped_structure' }
  | { attempt: number; kind: 'still_invalid'; issues: ValidationIssue[] };

/** The result of {@link repair}; `outcome` tells the variants apart. */
export type RepairDecision =
  | {
      outcome: 'fixed';
      /** The message to use: the received one with only `input` values replaced. */
      message: AssistantMessage;
      /** `valid_as_sent`: nothing to do; `normalized`: schema-driven corrections sufficed; `reshaped`: the reshaper's answer was accepted. */
      via: 'valid_as_sent' | 'normalized' | 'reshaped';
      attempts: number;
    }
  | { outcome: 'failed'; issues: ValidationIssue[]; attempts: number; failures: RepairAttemptFailure[] }
  | {
      outcome: 'refused';
      reason: 'no_tool_use' | 'unknown_tool' | 'no_attempts' | 'no_reshaper';
      issues: ValidationIssue[];
    }
  | {
      outcome: 'refused_destructive';
      /** `before_reshape`: the received message calls a destructive tool; `reshaped_answer`: a reshaper answer did. */
      stage: 'before_reshape' | 'reshaped_answer';
      toolNames: string[];
      issues: ValidationIssue[];
    }
  | { outcome: 'cancelled'; attempts: number };

/** What {@link repair} works with besides the message and the tool schemas. */
export interface RepairDeps {
  /** Decides validity; defaults to `zodToolUseValidator(tools)`. */
  validator?: ToolUseValidator;
  /** Proposes corrected arguments; without one, only schema-driven corrections are tried. */
  reshaper?: Reshaper | null;
  /** How many reshaper answers to try at most. Fractions round down; non-finite counts as zero. */
  maxAttempts: number;
  /** Whether a tool's arguments must never be written by anyone but the model. */
  isDestructive: (toolName: string) => boolean;
  /** Alias tables by tool name, used by the schema-driven corrections. */
  aliases?: ReadonlyMap<string, ParamAliases>;
  /** The model that produced the message, passed on to the reshaper; `null` or absent when unknown. */
  backendModel?: string | null;
  /** Cancels the repair; checked before each step and raced against every reshaper call. */
  signal?: AbortSignal;
}

/**
 * Tries to turn an assistant message with invalid tool calls into one whose
 * calls all validate, without ever inventing the arguments of a destructive
 * call.
 *
 * In order:
 * 1. An aborted `signal` gives `cancelled`; a message without `tool_use`
 *    blocks is `refused` (`no_tool_use`).
 * 2. The schema-driven corrections (`normalizeMessageInputs`: decoding of
 *    double-encoded values, aliases, `null`s of optional parameters) are
 *    applied. They only re-read what the model wrote, so they run even when a
 *    destructive tool is present. If every call now validates, the result is
 *    `fixed` and no reshaper is involved.
 * 3. Still invalid and any call names a destructive tool: `refused_destructive`,
 *    before any reshaper is asked. An unknown tool name cannot be fixed
 *    without renaming the call, which is not allowed: `refused`.
 *    No attempts allowed or no reshaper: `refused`.
 * 4. Up to `maxAttempts` times, the reshaper gets the corrected message and
 *    its issues (never an earlier answer). An answer must pass
 *    `guardReshaped` against the received message (a destructive name in it
 *    ends the repair with `refused_destructive`), then goes through the same
 *    corrections and must validate. The first that does is `fixed`; a
 *    reshaper that throws uses up its attempt. When none does: `failed`.
 *
 * Aborting the signal while a reshaper call is pending gives `cancelled` at
 * once, and a late answer is ignored. The received message is never mutated.
 */
export async function repair(assistant: AssistantMessage, tools: ToolSchemas, deps: RepairDeps): Promise<RepairDecision> {
  const { signal, isDestructive } = deps;
  if (aborted(signal)) return { outcome: 'cancelled', attempts: 0 };
  if (!assistant.content.some((block) => isRecord(block) && block.type === 'tool_use')) {
    return { outcome: 'refused', reason: 'no_tool_use', issues: [] };
  }
  const validator = deps.validator ?? zodToolUseValidator(tools);
  const normalized = normalizeMessageInputs(assistant, tools, deps.aliases);
  const working = normalized ?? assistant;
  const issues = await validateMessageAsync(working, validator);
  if (issues.length === 0) {
    return { outcome: 'fixed', message: working, via: normalized === null ? 'valid_as_sent' : 'normalized', attempts: 0 };
  }

  const destructive = toolNames(assistant.content).filter((name) => isDestructive(name));
  if (destructive.length > 0) {
    return { outcome: 'refused_destructive', stage: 'before_reshape', toolNames: unique(destructive), issues };
  }
  if (issues.some((issue) => issue.code === 'unknown_tool')) return { outcome: 'refused', reason: 'unknown_tool', issues };
  const maxAttempts = Number.isFinite(deps.maxAttempts) ? Math.floor(deps.maxAttempts) : 0;
  if (maxAttempts <= 0) return { outcome: 'refused', reason: 'no_attempts', issues };
  const reshaper = deps.reshaper;
  if (reshaper === undefined || reshaper === null) return { outcome: 'refused', reason: 'no_reshaper', issues };

  const failures: RepairAttemptFailure[] = [];
  let lastIssues = issues;
  for (let attempt = 1; attempt <= maxAttempts; attempt++) {
    if (aborted(signal)) return { outcome: 'cancelled', attempts: attempt - 1 };
    const request = { message: working, issues, attempt, backendModel: deps.backendModel ?? null };
    const settled = await settleOrAbort(() => reshaper.reshape(signal === undefined ? request : { ...request, signal }), signal);
    if (settled.kind === 'aborted' || aborted(signal)) return { outcome: 'cancelled', attempts: attempt };
    if (settled.kind === 'error') {
      failures.push({ attempt, kind: 'threw', error: settled.error });
      continue;
    }
    const verdict = guardReshaped(assistant, settled.value, isDestructive);
    if (verdict === 'refused_destructive') {
      const names = toolNames(contentOf(settled.value)).filter((name) => isDestructive(name));
      return { outcome: 'refused_destructive', stage: 'reshaped_answer', toolNames: unique(names), issues };
    }
    if (verdict === 'failed') {
      failures.push({ attempt, kind: 'reshaped_structure' });
      continue;
    }
    const adopted = adoptInputs(assistant, settled.value);
    const candidate = normalizeMessageInputs(adopted, tools, deps.aliases) ?? adopted;
    const candidateIssues = await validateMessageAsync(candidate, validator);
    if (candidateIssues.length === 0) return { outcome: 'fixed', message: candidate, via: 'reshaped', attempts: attempt };
    failures.push({ attempt, kind: 'still_invalid', issues: candidateIssues });
    lastIssues = candidateIssues;
  }
  return { outcome: 'failed', issues: lastIssues, attempts: maxAttempts, failures };
}

/**
 * The received message with each `tool_use` input taken from a guarded
 * answer. Everything else comes from the received message itself, so what is
 * emitted is exactly what the guard approved.
 */
function adoptInputs(original: AssistantMessage, answer: AssistantMessage): AssistantMessage {
  const content = original.content.map((block, index): ContentBlock => {
    if (!isRecord(block) || block.type !== 'tool_use') return block;
    const replacement: unknown = answer.content[index];
    return { ...block, input: isRecord(replacement) ? replacement.input : undefined } as ContentBlock;
  });
  return { ...original, content };
}

/** Read through a function so that TypeScript does not narrow it across awaits. */
function aborted(signal: AbortSignal | undefined): boolean {
  return signal?.aborted === true;
}

function contentOf(message: unknown): unknown[] {
  return isRecord(message) && Array.isArray(message.content) ? message.content : [];
}

function toolNames(content: readonly unknown[]): string[] {
  return content.flatMap((block) => (isRecord(block) && block.type === 'tool_use' && typeof block.name === 'string' ? [block.name] : []));
}

function unique(names: readonly string[]): string[] {
  return [...new Set(names)];
}
