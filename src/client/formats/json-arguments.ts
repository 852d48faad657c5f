import { rejectedCall, type TurnCallEntry } from '../turn.js';

const QUOTED_CHARS = 200;

/**
 * A call whose arguments arrive as a JSON string (OpenAI's APIs). Text that is
 * not JSON becomes a refused call with a message the model can act on; blank
 * text means no arguments.
 */
export function callFromJsonArguments(id: string, name: unknown, text: unknown): TurnCallEntry {
  if (typeof name !== 'string' || name === '') return rejectedCall(id, '', `tool call ${id} names no tool; call one of the listed tools by name`);
  if (typeof text !== 'string') return rejectedCall(id, name, `the arguments of tool call ${id} (${name}) must be a JSON string`);
  if (text.trim() === '') return { kind: 'call', call: { id, name, input: {} } };
  try {
    return { kind: 'call', call: { id, name, input: JSON.parse(text) as unknown } };
  } catch {
    const quoted = text.length > QUOTED_CHARS ? `${text.slice(0, QUOTED_CHARS)}…` : text;
    return rejectedCall(
      id,
      name,
      `the arguments of tool call ${id} (${name}) are not valid JSON, so the tool was not run. ` +
        `Received: ${quoted}. Send the arguments again as one JSON object.`,
    );
  }
}
