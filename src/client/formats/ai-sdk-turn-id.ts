/**
 * The turn id an AI SDK tool call is submitted under when `aiSdkTools` is
 * given no `turnIdOf`: the provider's tool-call id plus a digest of what the
 * model was answering and what it asked for.
 */
import { canonicalJson } from '../../core/canonical-json.js';
import { sha256Digest } from '../../core/identity.js';

/** One tool call as the AI SDK hands it to a tool's `execute`. */
export interface AiSdkToolCallContext {
  /** The provider's tool-call id. */
  readonly toolCallId: string;
  readonly toolName: string;
  /** The input the model sent. */
  readonly input: unknown;
  /**
   * The messages the model was given for the step that made this call (the
   * SDK's `messages` option of `execute`: the step's prompt, without the
   * system prompt and without the assistant message holding the call).
   */
  readonly messages: readonly unknown[];
}

/** Hex digits of the digest kept in the id: 128 bits, plenty for the calls of one run. */
const DIGEST_HEX = 32;

/**
 * `ai-sdk:<toolCallId>:<digest>`, the digest taken over the call's tool name,
 * input and id and over the step's messages, each in canonical form.
 *
 * The step that made a call is named by the messages that led to it, so a
 * step run again from the same messages (an agent resuming a run it lost, a
 * provider that gives the same ids for the same prompt) submits under the
 * same id and attaches to the job already there. A provider that reuses a
 * tool-call id in a later step, or in a later request of the same run,
 * answers other messages there, so that call gets its own id and its own job
 * even when its tool and input are the same.
 *
 * Key order does not matter (messages read back from a database that reorders
 * keys name the same step); bytes (an image or file part given as a
 * `Uint8Array` or `ArrayBuffer`) count by their content.
 */
export async function aiSdkTurnId(call: AiSdkToolCallContext): Promise<string> {
  const context = { toolCallId: call.toolCallId, toolName: call.toolName, input: call.input, messages: call.messages };
  return digestedTurnId('ai-sdk', call.toolCallId, context);
}

/**
 * `<label>:<toolCallId>:<digest>`, the digest (128 bits) taken over
 * `context` in canonical form, read as {@link aiSdkTurnId} reads it (key
 * order does not matter; bytes count by their content).
 */
export async function digestedTurnId(label: string, toolCallId: string, context: object): Promise<string> {
  const digest = await sha256Digest(canonicalJson(asPlainJson(context)));
  return `${label}:${toolCallId}:${digest.slice(0, DIGEST_HEX)}`;
}

/**
 * The value as plain JSON data, read as `JSON.stringify` reads it (`toJSON`
 * applied, `undefined` members left out) except that bytes become
 * `{ bytes: <base64> }` instead of a list of indices or nothing.
 */
function asPlainJson(value: object): unknown {
  return JSON.parse(
    JSON.stringify(value, function (this: Record<string, unknown>, key, replaced: unknown) {
      const raw = this[key];
      if (raw instanceof ArrayBuffer) return { bytes: Buffer.from(raw).toString('base64') };
      if (ArrayBuffer.isView(raw)) return { bytes: Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength).toString('base64') };
      return replaced;
    }),
  );
}
