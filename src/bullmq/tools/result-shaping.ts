/**
 * A tool's return value as the model sees it: capped, or offloaded to a result
 * store with a preview and the page-back tool.
 */
import { capToolResultForLlm, type ToolResultSpillOptions } from '../../offload/capper.js';
import { DEFAULT_TOOL_RESULT_CHARS, DEFAULT_TOOL_RESULT_THRESHOLD_CHARS } from '../../offload/shaping.js';
import { createReadToolResultTool } from '../../offload/read-tool.js';
import type { ToolResultProvenance, ToolResultStore } from '../../offload/types.js';
import { ToolRefusedError } from '../../core/tiers.js';
import { stringifyToolResult, ToolErrorResult, unwrapToolResultForLlm } from '../../core/result-text.js';

export { ToolErrorResult } from '../../core/result-text.js';
import { defineTool, type AnyToolDefinition } from './define-tool.js';
import type { ToolCall, ToolJobData } from '../../core/job-data.js';
import type { RecordedToolResult } from '../runtime.js';

/** Where large results go and how much of a result the model may see. */
export interface ResultShapingOptions {
  /** Store for results over the threshold; without one, results over the cap are cut. */
  readonly resultStore?: ToolResultStore;
  /** Offload results longer than this. Default 20,000 characters. */
  readonly offloadThresholdChars?: number;
  /** Most characters of one result the model (and the receipt) gets. Default 100,000. */
  readonly maxResultChars?: number;
}

/**
 * The session a job's offloaded results belong to: the job's `sessionId`, or
 * its tenant and run when it names none. It is both the ref's first segment
 * and the recorded owner.
 */
export function offloadSessionOf(data: Pick<ToolJobData, 'tenantId' | 'runId' | 'sessionId'>): string {
  return data.sessionId ?? `${data.tenantId}/${data.runId}`;
}

/**
 * The owner the wrapper records with a job's offloaded results, and the only
 * owner its `ReadToolResult` reads for: the job's session (see
 * {@link offloadSessionOf}), narrowed to its tenant (`taskId` is
 * `tenant:<tenantId>`), so two tenants that reuse a session id cannot read
 * each other's results. `deleteBySession(offloadSessionOf(data))` removes them.
 */
export function offloadOwnerOf(data: Pick<ToolJobData, 'tenantId' | 'runId' | 'sessionId'>): ToolResultProvenance {
  return { sessionId: offloadSessionOf(data), taskId: `tenant:${data.tenantId}` };
}

/**
 * Build the function that turns a tool's return value into what the model
 * sees and the receipt stores: text, capped, and for large results a preview
 * whose ref points at the full text in the store. The ref includes a digest
 * of the text, so a replay returns the same preview byte for byte.
 */
export function resultShaper(options: ResultShapingOptions) {
  return async (value: unknown, call: ToolCall, _tool: AnyToolDefinition, data: ToolJobData): Promise<RecordedToolResult> => {
    const sessionId = offloadSessionOf(data);
    const spill = options.resultStore
      ? {
          store: options.resultStore,
          sessionId,
          provenance: offloadOwnerOf(data),
          overChars: options.offloadThresholdChars ?? DEFAULT_TOOL_RESULT_THRESHOLD_CHARS,
        }
      : null;
    if (value instanceof ToolErrorResult) {
      const shaped = await shapeValue(value.value, call, spill, options);
      return { content: shaped.content, is_error: true };
    }
    return shapeValue(value, call, spill, options);
  };
}

async function shapeValue(
  value: unknown,
  call: ToolCall,
  spill: ToolResultSpillOptions | null,
  options: ResultShapingOptions,
): Promise<RecordedToolResult> {
  const capped = await capToolResultForLlm(
    value,
    { toolName: call.name, toolCallId: call.id },
    {
      capChars: options.maxResultChars,
      spill,
    },
  );
  // The capper has already turned an unchanged result into text: use it rather than stringify again.
  return { content: capped.kind === 'unchanged' ? capped.text : capped.value };
}

/**
 * The page-back tool as a wrapper tool: read-only, so it runs without a
 * receipt, is idempotent and never destructive. It reads only results the
 * job's own tenant and session stored ({@link offloadOwnerOf}); any other ref
 * is refused with the same error result as a ref that does not exist.
 */
export function readToolResultTool(store: ToolResultStore, maxResultChars?: number): AnyToolDefinition {
  // A page fits the worker's cap, its footer (the next offset) included: the capper never cuts it.
  const reader = createReadToolResultTool(store, maxResultChars === undefined ? {} : { maxAnswerChars: maxResultChars });
  return defineTool({
    name: reader.name,
    description: reader.description,
    input: reader.input,
    effect: 'resumable',
    readOnly: true,
    async execute(args, ctx) {
      const answer = await reader.read(args, offloadOwnerOf(ctx));
      if (!answer.found) throw new ToolRefusedError(answer.text);
      return answer.text;
    },
  });
}

/**
 * Turns a tool's return value into what the model sees and the receipt
 * stores: at once for a result that fits (no promise to await), else a
 * promise (the capper, the store).
 */
export type ResultShaper = (
  value: unknown,
  call: ToolCall,
  tool: AnyToolDefinition,
  data: ToolJobData,
) => RecordedToolResult | Promise<RecordedToolResult>;

/**
 * The processor's result shaper. Without a result store, a result whose text
 * fits the cap is that text, made here; only a result over the cap, an
 * error result or a worker with a store enters the capper (src/offload),
 * which gives the same text for a result within its limits.
 */
export function resultShaperOf(options: ResultShapingOptions): ResultShaper {
  const shape = resultShaper(options);
  if (options.resultStore) return shape;
  const given = options.maxResultChars ?? DEFAULT_TOOL_RESULT_CHARS;
  const cap = Number.isFinite(given) && given > 0 ? Math.floor(given) : Number.POSITIVE_INFINITY;
  return (value, call, tool, data) => {
    if (!(value instanceof ToolErrorResult)) {
      const text = stringifyToolResult(unwrapToolResultForLlm(value));
      if (text.length <= cap) return { content: text };
    }
    return shape(value, call, tool, data);
  };
}
