/**
 * The page-back tool `ReadToolResult`: the model reads an offloaded result by
 * ref, one window at a time.
 */
import { z } from 'zod';
import { OFFLOAD_TOOL_NAME, unescapeRefAttribute } from './preview.js';
import { sameToolResultOwner } from './provenance.js';
import type { ToolResultProvenance, ToolResultSlice, ToolResultStore } from './types.js';

/** Characters one page-back call returns when the model gives no `limit`. */
export const READ_TOOL_RESULT_DEFAULT_LIMIT = 20_000;

/** Arguments of the page-back tool. */
export interface ReadToolResultArgs {
  ref: string;
  offset?: number;
  limit?: number;
}

/** Input schema of the page-back tool. */
export const readToolResultInput = z.object({
  ref: z.string().min(1).describe('The ref from the <persisted-output ref="..."> marker, copied exactly.'),
  offset: z.number().int().min(0).optional().describe('First character to return (0-based). Default 0.'),
  limit: z.number().int().min(1).optional().describe('Most characters to return. Larger values are reduced to the page size.'),
});

/**
 * The page-back tool as a plain definition: name, description, zod input
 * schema, effect class and an `execute` that returns the text for the model.
 * It only reads, so it is marked `readOnly` and `resumable` (running it twice
 * is harmless).
 */
export interface ReadToolResultTool {
  readonly name: typeof OFFLOAD_TOOL_NAME;
  readonly description: string;
  readonly input: typeof readToolResultInput;
  readonly effect: 'resumable';
  readonly readOnly: true;
  /** The answer for the model (see {@link ReadToolResultTool.read}). */
  execute(args: ReadToolResultArgs, reader?: ToolResultProvenance): Promise<string>;
  /**
   * The answer, and whether the ref was found. With `reader`, a ref counts as
   * found only when its recorded owner is exactly `reader`: for any other
   * owner, an unowned entry or an unknown ref the answer is the same "nothing
   * stored" text, so a refusal reveals nothing about the ref.
   */
  read(args: ReadToolResultArgs, reader?: ToolResultProvenance): Promise<{ found: boolean; text: string }>;
}

/** Options of {@link createReadToolResultTool}. */
export interface ReadToolResultToolOptions {
  /** Largest page; a bigger `limit` is reduced to it. Default {@link READ_TOOL_RESULT_DEFAULT_LIMIT}. */
  maxLimit?: number;
  /**
   * Largest answer, its header and footer lines included (a worker's
   * `maxResultChars`): a page is made smaller to fit, so its footer naming
   * the next offset is never cut off. Default: no bound beyond `maxLimit`.
   */
  maxAnswerChars?: number;
}

const DESCRIPTION =
  'Read part of a tool result that was too large to show in full. Such results appear as a ' +
  '<persisted-output ref="..."> preview; pass that ref, and optionally an offset and limit in ' +
  'characters, to get the text in pages.';

/**
 * Build the page-back tool over `store`. The BullMQ wrapper registers it on
 * its own whenever a store is configured, and the capper never offloads its
 * answers again.
 *
 * Each answer starts with a line naming the ref and the character range
 * returned, and ends with the next offset when text remains. An unknown,
 * expired or deleted ref gets a plain statement that nothing is stored under
 * it any more. Errors of the store itself are thrown, so the caller can retry.
 */
export function createReadToolResultTool(store: ToolResultStore, options: ReadToolResultToolOptions = {}): ReadToolResultTool {
  const maxLimit = Math.max(1, Math.floor(options.maxLimit ?? READ_TOOL_RESULT_DEFAULT_LIMIT));
  const maxAnswer = options.maxAnswerChars === undefined ? Number.POSITIVE_INFINITY : Math.floor(options.maxAnswerChars);
  return {
    name: OFFLOAD_TOOL_NAME,
    description: DESCRIPTION,
    input: readToolResultInput,
    effect: 'resumable',
    readOnly: true,
    async execute(args: ReadToolResultArgs, reader?: ToolResultProvenance): Promise<string> {
      return (await this.read(args, reader)).text;
    },
    async read(args: ReadToolResultArgs, reader?: ToolResultProvenance): Promise<{ found: boolean; text: string }> {
      const parsed = readToolResultInput.safeParse(args);
      if (!parsed.success) return { found: false, text: invalidArgsAnswer(parsed.error) };
      const { ref, offset, limit } = parsed.data;
      const room = Math.max(1, maxAnswer - pageFrameChars(ref));
      const window = { offset: offset ?? 0, limit: Math.min(limit ?? maxLimit, maxLimit, room) };
      const readable = async (candidate: string) => {
        if (reader === undefined) return true;
        const owner = await store.ownerOf(candidate);
        return owner !== undefined && sameToolResultOwner(owner, reader);
      };
      // The model may copy the ref with the marker's attribute escaping left in.
      for (const candidate of new Set([ref, unescapeRefAttribute(ref)])) {
        if (!(await readable(candidate))) continue;
        const slice = await store.get(candidate, window);
        if (slice !== undefined) return { found: true, text: pageAnswer(candidate, slice) };
      }
      return { found: false, text: unknownRefAnswer(ref) };
    },
  };
}

function invalidArgsAnswer(error: z.ZodError): string {
  const problems = error.issues.map((issue) => `${issue.path.join('.') || 'input'}: ${issue.message}`);
  return `${OFFLOAD_TOOL_NAME} was not run: ${problems.join('; ')}. Pass {"ref": string, "offset"?: integer >= 0, "limit"?: integer >= 1}.`;
}

function unknownRefAnswer(ref: string): string {
  return (
    `Nothing is stored under ref ${JSON.stringify(ref)}: it was never stored here, or it has expired ` +
    'or been deleted. Only the preview already in this conversation remains; work from that.'
  );
}

function pageAnswer(ref: string, slice: ToolResultSlice): string {
  const end = slice.offset + slice.content.length;
  if (slice.content.length === 0) {
    return `[ref ${JSON.stringify(ref)} holds ${slice.totalChars} characters; nothing at offset ${slice.offset}.]`;
  }
  return `${pageHeader(ref, slice.offset, end, slice.totalChars)}\n${slice.content}\n${pageFooter(end, slice.totalChars - end)}`;
}

const pageHeader = (ref: string, offset: number, end: number, total: number) =>
  `[ref ${JSON.stringify(ref)}: characters ${offset} to ${end} of ${total}]`;

const pageFooter = (end: number, remaining: number) =>
  remaining > 0
    ? `[${remaining} more characters; call ${OFFLOAD_TOOL_NAME} with offset ${end} for the next page.]`
    : '[end of the stored result]';

/** The most a page's header, footer and line breaks take: every number at its longest. */
function pageFrameChars(ref: string): number {
  const longest = Number.MAX_SAFE_INTEGER;
  return pageHeader(ref, longest, longest, longest).length + pageFooter(longest, longest).length + 2;
}
