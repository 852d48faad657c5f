import { capToolResultForLlm } from '../offload/capper.js';
import { DEFAULT_TOOL_RESULT_THRESHOLD_CHARS, stringifyToolResult } from '../offload/shaping.js';
import { createReadToolResultTool } from '../offload/read-tool.js';
import type { ToolResultStore } from '../offload/types.js';
import { defineTool, type AnyToolDefinition } from './define-tool.js';
import type { ToolCall, ToolJobData } from './job-data.js';
import type { RecordedToolResult } from './run-call.js';

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
export function offloadSessionOf(data: ToolJobData): string {
  return data.sessionId ?? `${data.tenantId}/${data.runId}`;
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
          overChars: options.offloadThresholdChars ?? DEFAULT_TOOL_RESULT_THRESHOLD_CHARS,
        }
      : null;
    const capped = await capToolResultForLlm(value, { toolName: call.name, toolCallId: call.id }, {
      capChars: options.maxResultChars,
      spill,
    });
    return { content: capped.kind === 'unchanged' ? stringifyToolResult(capped.value) : capped.value };
  };
}

/** The page-back tool as a wrapper tool: read-only, so it is idempotent and never destructive. */
export function readToolResultTool(store: ToolResultStore): AnyToolDefinition {
  const reader = createReadToolResultTool(store);
  return defineTool({
    name: reader.name,
    description: reader.description,
    input: reader.input,
    effect: 'resumable',
    readOnly: true,
    execute: (args) => reader.execute(args),
  });
}
