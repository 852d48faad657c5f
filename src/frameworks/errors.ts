/** The typed refusal of a decision a framework handed over for a call it does not fit. */
import { ToolReceiptsError } from '../core/errors.js';

/** Why a decision was refused: see {@link FrameworkApprovalRefusedError}. */
export type ApprovalRefusal = 'not_requested' | 'other_call' | 'other_arguments';

/**
 * A person's decision, as the framework handed it to the tool, does not fit
 * the call it would release, so nothing was decided and nothing ran:
 * `not_requested`, no approval was ever asked for a call with this id;
 * `other_call`, the approval asked under this id was for another tool or
 * call; `other_arguments`, the call now carries other arguments than the
 * ones the approval was asked for (edited in the history or the saved state).
 */
export class FrameworkApprovalRefusedError extends ToolReceiptsError {
  readonly code = 'framework.approval_refused';
  constructor(
    readonly toolCallId: string,
    readonly toolName: string,
    readonly refusal: ApprovalRefusal,
  ) {
    super(`the decision handed to ${toolName} for call ${JSON.stringify(toolCallId)} was refused, and nothing ran: ${REFUSALS[refusal]}`);
  }
}

const REFUSALS: Record<ApprovalRefusal, string> = {
  not_requested: 'no approval was asked for a call with this id, so no person can have decided on it',
  other_call: 'the approval asked under this id was for another call',
  other_arguments: 'the call carries other arguments than the ones its approval was asked for',
};
