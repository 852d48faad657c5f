/**
 * Tool calls whose arguments arrive as a JSON string (OpenAI's APIs), parsed
 * or refused with a message for the model.
 */
import { rejectedCall, toolCallEntry, type TurnCallEntry } from '../turn.js';

const QUOTED_CHARS = 200;

/**
 * A call whose arguments arrive as a JSON string (OpenAI's APIs). Text that is
 * not JSON becomes a refused call with a message the model can act on; blank
 * text means no arguments.
 */
export function callFromJsonArguments(format: string, id: unknown, name: unknown, text: unknown): TurnCallEntry {
  const parsed = parseArguments(text);
  const entry = toolCallEntry(format, id, name, parsed.ok ? parsed.value : undefined);
  if (parsed.ok || entry.kind === 'rejected') return entry;
  const quoted = typeof text === 'string' && text.length > QUOTED_CHARS ? `${text.slice(0, QUOTED_CHARS)}…` : String(text);
  return rejectedCall(
    entry.call.id,
    entry.call.name,
    typeof text === 'string'
      ? `the arguments of tool call ${entry.call.id} (${entry.call.name}) are not valid JSON, so the tool was not run. ` +
          `Received: ${quoted}. Send the arguments again as one JSON object.`
      : `the arguments of tool call ${entry.call.id} (${entry.call.name}) must be a JSON string`,
  );
}

function parseArguments(text: unknown): { ok: true; value: unknown } | { ok: false } {
  if (typeof text !== 'string') return { ok: false };
  if (text.trim() === '') return { ok: true, value: {} };
  try {
    return { ok: true, value: JSON.parse(text) as unknown };
  } catch {
    return { ok: false };
  }
}
