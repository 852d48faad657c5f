/**
 * The `core` layer's public face: identity, decisions, tiers and errors, pure
 * and without Redis.
 */
export { ToolReceiptsError } from './errors.js';
export { TOOL_RECEIPTS_ERROR_CODES, isToolReceiptsErrorCode, type ToolReceiptsErrorCode } from './error-codes.js';
export { InvalidOptionsError, type OptionSite } from './options.js';
export { canonicalJson, CanonicalJsonError, CANONICAL_JSON_MAX_DEPTH, type CanonicalJsonErrorReason } from './canonical-json.js';
export {
  type ToolCallReceiptKey,
  type DigestFn,
  sha256Digest,
  hmacSha256Digest,
  InvalidDigestSecretError,
  toolCallArgsHash,
  toolCallReceiptKeyString,
  isWellFormedText,
  assertWellFormedNames,
  MalformedNameError,
} from './identity.js';
export {
  type ReceiptState,
  type EffectResumability,
  type ReceiptEffect,
  type ReceiptDecision,
  decideToolCallReceipt,
  effectForClaim,
} from './decision.js';
export {
  type FailureTier,
  MAX_TOOL_FAILURES,
  MAX_TOOL_REJECTIONS,
  REJECTION_SUFFIX,
  REJECTION_REMOVAL_SUFFIX,
  TIER_SUFFIX,
  failureTier,
  failureFactsOf,
  NeverStartedError,
  OutcomeUnknownError,
  ToolRefusedError,
  retriesAutomatically,
  DestructiveRanError,
} from './tiers.js';
export {
  classifyToolCallJournal,
  isJournalEmpty,
  findCompletedJournalEntry,
  buildResumeJournalNote,
  journalFromReceipts,
  recordedToolResultContent,
  JOURNAL_NOTE_MAX_RESULT_CHARS,
  JOURNAL_NOTE_MAX_INPUT_CHARS,
  type JournalEvent,
  type JournalToolStartEvent,
  type JournalToolDoneEvent,
  type JournalClearEvent,
  type ToolCallJournal,
  type ToolCallJournalEntry,
  type JournalReceiptRecord,
  type JournalReceiptFields,
} from './journal.js';
