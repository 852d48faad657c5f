/** The rules of the approval options, shared by `defineTool` and `withToolReceipts` so both check them alike, once. */
import { functionOption, MAX_TIMER_MS, rule, wholeNumber, type OptionsSchema } from '../core/options.js';
import type { ApprovalOptions } from './types.js';

/** The rule of each approval option. */
export const APPROVAL_OPTIONS_SCHEMA: OptionsSchema<ApprovalOptions> = {
  approval: rule(`'always', or a function (args, ctx) => boolean | { reason }`, (v) => v === 'always' || typeof v === 'function'),
  redact: functionOption('a function (args) => what an approver is shown (JSON-serializable)'),
  // Parked with a BullMQ delay, which is a timer: at most about 24.8 days.
  approvalTimeoutMs: wholeNumber(1, 'ms', MAX_TIMER_MS),
};
