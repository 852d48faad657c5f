/**
 * `bullmq-tool-receipts/approvals`: calls that wait for a person. Approve or
 * deny a call awaiting approval (a fenced decision: one approval runs it
 * once), list the pending ones, read one. The worker's gate lives here too;
 * a tool asks for approval with `defineTool({ approval })`. See docs/approvals.md.
 */
export type { ApprovalContext, ApprovalDecided, ApprovalOptions, ApprovalRule, DecideApprovalInput, PendingApproval } from './types.js';
export { ApprovalArgsMismatchError, ApprovalExpiredError, ApprovalNotPendingError, ApprovalStaleError } from './errors.js';
export { APPROVAL_ACTOR_MAX, APPROVAL_NOTE_MAX, approveCall, denyCall } from './decide.js';
export {
  countPendingApprovals,
  listPendingApprovals,
  PENDING_COUNT_LIMIT,
  readApproval,
  type DecidedApproval,
  type PendingApprovalCount,
} from './read.js';
export { pendingApprovalsRedisKey } from './keys.js';
export { DEFAULT_APPROVAL_TIMEOUT_MS } from './gate.js';
