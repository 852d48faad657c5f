/**
 * The `Reshaper` interface: what a model-backed corrector is asked and
 * answers.
 */
import type { AssistantMessage, ValidationIssue } from './types.js';

/** What a {@link Reshaper} is asked to correct. */
export interface ReshapeRequest {
  /**
   * The message to correct: the one the model sent, after the deterministic
   * decoding of double-encoded inputs. Never an answer from an earlier attempt.
   */
  message: AssistantMessage;
  /** Why that message is invalid. */
  issues: readonly ValidationIssue[];
  /** Which attempt this is, starting at 1. */
  attempt: number;
  /** The model that produced the invalid message, or `null` when unknown. */
  backendModel: string | null;
  /** Aborts when the caller no longer wants an answer. */
  signal?: AbortSignal;
}

/**
 * Proposes corrected tool arguments for an invalid message. The host supplies
 * it; a typical one asks a language model to rewrite the `input` values.
 *
 * The answer is untrusted: `repair` accepts it only if the structure is
 * unchanged (see `guardReshaped`) and every call then validates. Only the
 * `input` of each `tool_use` block is taken from it.
 */
export interface Reshaper {
  reshape(request: ReshapeRequest): Promise<AssistantMessage>;
}
