/**
 * The job data a turn's job carries (its calls, tenant and run) and the result
 * it returns: the wire format the client writes and the worker checks at the door.
 */
import { z } from 'zod';
import { ToolReceiptsError } from './errors.js';
import { isWellFormedText } from './identity.js';
import { jobDataShapeHint } from './job-data-hint.js';

/** A name stored in receipt fields and keys: non-empty, and well-formed Unicode so it reads back as itself. */
const storedName = (what: string) =>
  z.string().min(1).refine(isWellFormedText, `the ${what} contains a lone UTF-16 surrogate; pass well-formed Unicode`);

/** One tool call as a model emits it (the `id`/`name`/`input` of a `tool_use` block). */
export const toolCallSchema = z.object({
  id: z.string().min(1, 'a tool call needs its tool_use id'),
  name: z.string().min(1, 'a tool call needs a tool name'),
  // Left open on purpose: malformed inputs (a JSON string, nulls, none at all) are repaired or refused per call, later.
  input: z.unknown().optional(),
});

/** The data of a job the wrapper processes. */
export const toolJobDataSchema = z.object({
  tenantId: storedName('tenant id'),
  runId: storedName('run id'),
  sessionId: storedName('session id').optional(),
  calls: z
    .array(toolCallSchema)
    .min(1, 'a job needs at least one tool call')
    .superRefine((calls, ctx) => {
      // Two tool_result blocks with one tool_use_id would be rejected by the model's API.
      const seen = new Set<string>();
      calls.forEach((call, i) => {
        if (seen.has(call.id))
          ctx.addIssue({
            code: 'custom',
            path: [i, 'id'],
            message: `duplicate tool call id ${JSON.stringify(call.id)}; each call of a job needs its own id`,
          });
        seen.add(call.id);
      });
    }),
  /**
   * Run every call of this job side by side, whatever its tool says (default:
   * only consecutive calls of tools declared `parallel` do). Each keeps its
   * own receipt, lease and fence; results stay in call order.
   */
  parallel: z.boolean().optional(),
});

/** One tool call of a job, as parsed by {@link toolCallSchema}. */
export type ToolCall = z.infer<typeof toolCallSchema>;
/** A job's data, as parsed by {@link toolJobDataSchema}. */
export type ToolJobData = z.infer<typeof toolJobDataSchema>;

/** How one call ended, from the wrapper's point of view. */
export type ToolCallOutcome = 'executed' | 'replayed' | 'failed' | 'rejected' | 'ambiguous' | 'denied';

/** One entry of the job's return value, ready to append to the conversation. */
export interface ToolResultBlock {
  readonly type: 'tool_result';
  readonly tool_use_id: string;
  readonly content: string;
  readonly is_error?: true;
  readonly outcome: ToolCallOutcome;
}

/** The block for `call` with the given outcome and result text. */
export function toolResultBlock(
  call: ToolCall,
  outcome: ToolCallOutcome,
  result: { readonly content: string; readonly is_error?: true },
): ToolResultBlock {
  // Two literals rather than a conditional spread: this runs for every call (the bench measures it).
  return result.is_error
    ? { type: 'tool_result', tool_use_id: call.id, content: result.content, is_error: true, outcome }
    : { type: 'tool_result', tool_use_id: call.id, content: result.content, outcome };
}

/** The return value of a wrapped job. */
export interface ToolJobResult {
  readonly results: ToolResultBlock[];
}

/**
 * The job's data did not match {@link toolJobDataSchema}; nothing was claimed
 * or written. When the data is shaped like another model API's tool calls,
 * `hint` (also the message's last sentence) names the `/client` adapter that
 * converts it.
 */
export class InvalidJobDataError extends ToolReceiptsError {
  readonly code = 'job.invalid_data';
  readonly issues: z.core.$ZodIssue[];
  readonly hint: string | undefined;
  constructor(issues: z.core.$ZodIssue[], hint?: string) {
    const detail = z.prettifyError(new z.ZodError(issues)).replace(/\n/g, '; ');
    super(`invalid tool job data: ${detail}${hint === undefined ? '' : `. Hint: ${hint}`}`);
    this.issues = issues;
    this.hint = hint;
  }
}

/**
 * Calls that carry another API's `arguments` (a JSON string) instead of an
 * `input`: OpenAI's shape, which has an `id` and a `name` too. Taken as they
 * are, each would be refused for its missing input, so the job is refused
 * whole, with the hint that names the adapter. `undefined` when there are none.
 */
function argumentsWithoutInput(data: unknown): z.core.$ZodIssue[] | undefined {
  const calls = (data as { calls?: unknown }).calls;
  if (!Array.isArray(calls)) return undefined;
  // A plain loop: every job's calls are read here, and almost never is one foreign.
  let issues: z.core.$ZodIssue[] | undefined;
  for (let i = 0; i < calls.length; i++) {
    const call: unknown = calls[i];
    if (typeof call === 'object' && call !== null && 'arguments' in call && (call as { input?: unknown }).input === undefined) {
      (issues ??= []).push({ code: 'custom', path: ['calls', i], input: undefined, message: 'this call has `arguments` but no `input`' });
    }
  }
  return issues;
}

/** Parse job data or throw {@link InvalidJobDataError}. */
export function parseToolJobData(data: unknown): ToolJobData {
  const parsed = toolJobDataSchema.safeParse(data);
  if (!parsed.success) throw new InvalidJobDataError(parsed.error.issues, jobDataShapeHint(data));
  const foreign = argumentsWithoutInput(data);
  if (foreign !== undefined) throw new InvalidJobDataError(foreign, jobDataShapeHint(data));
  return parsed.data;
}
