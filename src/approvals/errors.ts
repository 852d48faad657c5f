/** The typed refusals of an approval decision; each was refused with nothing written. */
import { ToolReceiptsError } from '../core/errors.js';

/** The call is not awaiting approval: nobody asked, or somebody already decided (named here). */
export class ApprovalNotPendingError extends ToolReceiptsError {
  readonly code = 'approval.not_pending';
  constructor(
    readonly receiptKey: string,
    readonly status: string,
    /** Who decided, when somebody did (`expiry` when it expired). */
    readonly decidedBy?: string,
    readonly decision?: 'approved' | 'denied',
  ) {
    super(
      decidedBy && decision
        ? `${receiptKey} is not awaiting approval: ${decidedBy} already ${decision === 'approved' ? 'approved' : 'denied'} it; nothing was written`
        : status === ''
          ? `${receiptKey} is not awaiting approval: there is no such receipt; nothing was written`
          : `${receiptKey} is not awaiting approval (status ${status}); nothing was written`,
    );
  }
}

/** The decision names another lifetime of the receipt than the current one. */
export class ApprovalStaleError extends ToolReceiptsError {
  readonly code = 'approval.stale_lifetime';
  constructor(readonly receiptKey: string) {
    super(
      `the decision names another lifetime of ${receiptKey} than its current one (epoch differs); list the pending approvals again; nothing was written`,
    );
  }
}

/** The decision names other arguments than the call's. */
export class ApprovalArgsMismatchError extends ToolReceiptsError {
  readonly code = 'approval.args_mismatch';
  constructor(readonly receiptKey: string) {
    super(`the decision names another arguments digest than the call's at ${receiptKey}; nothing was written`);
  }
}

/** The approval expired before the decision came: the call counts as denied. */
export class ApprovalExpiredError extends ToolReceiptsError {
  readonly code = 'approval.expired';
  constructor(
    readonly receiptKey: string,
    readonly expiredAtMs: number,
  ) {
    super(
      `the approval of ${receiptKey} expired at ${new Date(expiredAtMs).toISOString()}; the call counts as denied; nothing was written`,
    );
  }
}
