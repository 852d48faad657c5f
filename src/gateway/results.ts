/**
 * What the gateway answers for a call: the upstream's own result, kept whole
 * on the receipt by the worker and given back by the front (a replay is the
 * same result, block for block), or one sentence for every end that is not a
 * result (unknown outcome, awaiting approval, still running, not run). Every
 * answer says in `_meta` how the call ended. Pure.
 */
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';

/** The `_meta` key of an answer saying how the call ended: `executed`, `replayed`, `ambiguous`, `denied`, … */
export const GATEWAY_OUTCOME_META = 'bullmq-tool-receipts/outcome';
/** The `_meta` key of an answer naming the call's receipt (for `tool-receipts show`), when the answer knows it. */
export const GATEWAY_RECEIPT_META = 'bullmq-tool-receipts/receipt-key';

/** Marks a stored result as the upstream's whole `CallToolResult`. */
const MARK = 'bullmq-tool-receipts/mcp-result';

/** How a call ended, as an answer's `_meta` says it. */
export type GatewayOutcome =
  'executed' | 'replayed' | 'failed' | 'rejected' | 'denied' | 'ambiguous' | 'awaiting_approval' | 'running' | 'not_run' | 'unknown';

/**
 * The text a worker records for an upstream's result (its `renderResult`):
 * the whole result (every content block, `structuredContent`) as JSON, so
 * the front can answer with it as the upstream gave it. A result whose
 * record would be longer than `maxChars` (the gateway's `maxResultChars`)
 * is recorded cut, as a record still: its text blocks' text, cut to fit,
 * then a line saying so; its other blocks and `structuredContent` are left
 * out. So the model reads the upstream's text cut short, never this
 * record's JSON cut by the size cap.
 */
export function recordedMcpResult(result: CallToolResult, maxChars = Number.POSITIVE_INFINITY): string {
  const content = Array.isArray(result.content) ? result.content : [];
  const kept: Record<string, unknown> = { [MARK]: 1, content };
  if (result.structuredContent !== undefined) kept.structuredContent = result.structuredContent;
  const whole = JSON.stringify(kept);
  return whole.length <= maxChars ? whole : cutRecord(content, whole.length, maxChars);
}

/** The record of a result too long to keep: its text cut to fit `maxChars` as JSON, and a line saying so. */
function cutRecord(content: CallToolResult['content'], wholeChars: number, maxChars: number): string {
  const texts = content.flatMap((block) => (block.type === 'text' ? [block.text] : []));
  const others = content.length - texts.length;
  const left = others === 0 ? '' : `, and ${others} block(s) of other kinds left out`;
  const note = `\n[cut: the result was ${wholeChars} characters as the gateway records it, more than it keeps (maxResultChars ${maxChars})${left}.]`;
  const record = (text: string) => JSON.stringify({ [MARK]: 1, cut: 1, content: [{ type: 'text', text: text + note }] });
  let text = texts.join('\n\n');
  // Escaping makes the JSON longer than the text: cut by what is over, a few times at most.
  for (let over = record(text).length - maxChars; over > 0 && text.length > 0; over = record(text).length - maxChars) {
    let end = Math.max(0, text.length - over);
    // Never half a surrogate pair: a lone one is not well-formed text.
    if (end > 0 && /[\uD800-\uDBFF]/.test(text[end - 1]!)) end -= 1;
    text = text.slice(0, end);
  }
  return record(text);
}

/**
 * The upstream's result back from what {@link recordedMcpResult} recorded
 * (`cut` when it was recorded cut), or `undefined` when the text is
 * something else (a record an earlier release let the size cap cut, say).
 */
export function upstreamResultOf(
  recorded: string,
): (Pick<CallToolResult, 'content' | 'structuredContent'> & { readonly cut?: true }) | undefined {
  if (!recorded.startsWith(`{"${MARK}":1,`)) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(recorded);
  } catch {
    return undefined;
  }
  const kept = parsed as { content?: unknown; structuredContent?: unknown; cut?: unknown };
  if (!Array.isArray(kept.content)) return undefined;
  const content = kept.content as CallToolResult['content'];
  if (kept.cut === 1) return { content, cut: true };
  const structured = kept.structuredContent;
  return typeof structured === 'object' && structured !== null && !Array.isArray(structured)
    ? { content, structuredContent: structured as Record<string, unknown> }
    : { content };
}

/** An answer of one sentence, an error result unless said otherwise. */
export function sentence(text: string, outcome: GatewayOutcome, receiptKey?: string, isError = true): CallToolResult {
  return {
    content: [{ type: 'text', text }],
    ...(isError ? { isError: true } : {}),
    _meta: { [GATEWAY_OUTCOME_META]: outcome, ...(receiptKey === undefined ? {} : { [GATEWAY_RECEIPT_META]: receiptKey }) },
  };
}

/**
 * The answer for a call that ran, or was replayed: the upstream's result as
 * it gave it (an upstream error result stays one). A recorded text that is
 * not the whole result (it was longer than the gateway keeps, and cut) is
 * answered as that text; for a tool that declares an `outputSchema`, whose
 * clients expect `structuredContent`, as an error result saying so.
 */
export function ranResult(recorded: string, isError: boolean, outcome: 'executed' | 'replayed', hasOutputSchema: boolean): CallToolResult {
  const meta = { [GATEWAY_OUTCOME_META]: outcome };
  const whole = upstreamResultOf(recorded);
  if (whole !== undefined && whole.cut === undefined) return { ...whole, ...(isError ? { isError: true } : {}), _meta: meta };
  const text = whole === undefined ? recorded : whole.content.map((block) => (block.type === 'text' ? block.text : '')).join('');
  if (hasOutputSchema && !isError) {
    return {
      content: [
        { type: 'text', text: `The tool ran, but its result was longer than the gateway keeps (maxResultChars) and was cut:\n${text}` },
      ],
      isError: true,
      _meta: meta,
    };
  }
  return { content: [{ type: 'text', text }], ...(isError ? { isError: true } : {}), _meta: meta };
}

/** Whether-it-ran-is-unknown: never run again by the gateway, and not to be retried blindly. */
export function ambiguousAnswer(tool: string, receiptKey: string | undefined): CallToolResult {
  const settle = receiptKey === undefined ? '' : ` An operator can look at it and settle it: tool-receipts show '${receiptKey}'.`;
  return sentence(
    `Whether this ${tool} call ran is unknown: it was cut off while in progress (its worker stopped, or the server's answer was lost), so its effect may or may not have happened. The gateway did not run it again and will not: calling it again with the same arguments never runs it (it gives this answer again, or the result, should the stopped attempt still finish). Do not retry it blindly: check the system it acts on, or ask the user.${settle}`,
    'ambiguous',
    receiptKey,
  );
}

/** Awaiting a person's decision: not run yet, and how to get its result once decided. */
export function awaitingApprovalAnswer(
  tool: string,
  approval: { receiptKey: string; reason?: string; expiresAtMs: number },
): CallToolResult {
  const why = approval.reason ? ` (${approval.reason})` : '';
  return sentence(
    `This ${tool} call waits for a person's approval${why} and has not run. Once someone approves it (tool-receipts approve '${approval.receiptKey}', or the console), call it again with the same arguments: it then runs, once. If it is denied, or not decided by ${new Date(approval.expiresAtMs).toISOString()}, it never runs.`,
    'awaiting_approval',
    approval.receiptKey,
  );
}

/** Still running after the front stopped waiting: not cancelled, and safe to ask again. */
export function stillRunningAnswer(tool: string, waitedMs: number): CallToolResult {
  return sentence(
    `This ${tool} call has not finished after ${Math.round(waitedMs / 1000)} s (it may be running, or waiting for a worker); it was not cancelled. Calling it again with the same arguments waits for this same call: it will not run twice.`,
    'running',
  );
}

/** The queue could not be reached while the call was submitted: whether it was enqueued is unknown, and asking again is safe. */
export function queueUnreachableAnswer(tool: string, reason: string): CallToolResult {
  return sentence(
    `The gateway could not reach its queue while submitting this ${tool} call (${reason}), so whether it was enqueued is unknown. Calling it again with the same arguments is safe: the gateway runs one call at most once.`,
    'unknown',
  );
}
