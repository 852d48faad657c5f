/**
 * The errors of result offload: a ref that conflicts with another owner's, and
 * the stores' refusals.
 */
import { ToolReceiptsError } from '../core/errors.js';
import { InvalidOptionsError } from '../core/options.js';
import type { ToolResultProvenance } from './types.js';

/** `code` of {@link ToolResultRefConflictError}. */
export const TOOL_RESULT_REF_CONFLICT_CODE = 'tool_result.ref_conflict';

/**
 * A `put` named a ref that already holds an entry recorded for a different
 * owner. The stored entry is left exactly as it was.
 *
 * Refs are primary keys under a write-once rule, so quietly keeping the first
 * entry here would hand the second writer a ref to somebody else's text. This
 * is therefore a refusal, not an idempotent no-op.
 */
export class ToolResultRefConflictError extends ToolReceiptsError {
  readonly code = TOOL_RESULT_REF_CONFLICT_CODE;

  /**
   * @param ref the ref both writers named
   * @param stored the owner recorded at the winning write; `undefined` when the
   *   stored owner record exists but cannot be read (it is never adopted either)
   * @param incoming the owner the refused `put` stated
   */
  constructor(
    readonly ref: string,
    readonly stored: ToolResultProvenance | undefined,
    readonly incoming: ToolResultProvenance,
  ) {
    super(
      `tool result ref ${JSON.stringify(ref)} is already stored for another owner ` +
        `(stored session ${stored ? JSON.stringify(stored.sessionId) : 'unreadable'}, ` +
        `incoming session ${JSON.stringify(incoming.sessionId)}); the stored entry was kept`,
    );
  }
}

/**
 * A ref that no backend could key safely: empty, `.` or `..`, containing a
 * path separator, a control character or an unpaired surrogate, or longer than
 * the ref ceiling. Thrown by `put`; the read side answers "unknown" instead.
 */
export class UnsafeToolResultRefError extends ToolReceiptsError {
  readonly code = 'tool_result.unsafe_ref';

  constructor(
    readonly ref: unknown,
    readonly reason: string,
  ) {
    super(`unsafe tool result ref: ${reason}`);
  }
}

/** A segment handed to `buildToolResultRef` was not a string. */
export class InvalidToolResultRefSegmentError extends ToolReceiptsError {
  readonly code = 'tool_result.invalid_ref_segment';

  constructor(readonly position: number) {
    super(`tool result ref segment #${position} is not a string`);
  }
}

/** An owner passed to `put` is not `{ sessionId: string, taskId?: string }`. */
export class InvalidToolResultProvenanceError extends ToolReceiptsError {
  readonly code = 'tool_result.invalid_provenance';
}

/**
 * A tool-result store was constructed with options it cannot honour. The
 * same class as every refused option ({@link InvalidOptionsError}, code
 * `options.invalid`); this name is kept so existing `instanceof` checks hold.
 */
export const ToolResultStoreConfigError = InvalidOptionsError;
/** See the constant of the same name. */
export type ToolResultStoreConfigError = InvalidOptionsError;
