/**
 * The `bullmq` layer's public face: `withToolReceipts`, `defineTool`, the
 * sweep, and their types.
 */
export {
  defineTool,
  toolJsonSchema,
  toolListForModel,
  InvalidToolDefinitionError,
  ToolSchemaUnsupportedError,
  type ToolSpec,
  type NonTransactionalToolSpec,
  type ToolDefinition,
  type AnyToolDefinition,
  type ToolContext,
  type ToolAnnotations,
  type ToolEffect,
  type TransactionalToolSpec,
  type TransactionalToolContext,
  type ReconcileContext,
  type ReconcileAnswer,
} from './tools/define-tool.js';
export {
  toolCallSchema,
  toolJobDataSchema,
  parseToolJobData,
  InvalidJobDataError,
  type ToolCall,
  type ToolJobData,
  type ToolCallOutcome,
  type ToolResultBlock,
  type ToolJobResult,
} from './job-data.js';
export {
  AmbiguousToolCallError,
  InvalidToolReceiptsOptionsError,
  JobCancelledError,
  JobLockLostError,
  ToolCallFailedError,
} from './errors.js';
export {
  ToolReceiptsEvents,
  type ToolReceiptsEventMap,
  type ToolCallEventBase,
  type DecisionEvent,
  type AmbiguousEvent,
  type FencedOutEvent,
  type SettledEvent,
  type LateSettleEvent,
  type ReconciledEvent,
  type KeyedRerunEvent,
  type ApprovalEvent,
} from './events.js';
export { DEFAULT_RECONCILE_TIMEOUT_MS } from './outcomes/expired.js';
export { retryFailedJobs, CallNotSettledError, type JobRetryReport } from './sweep/retry-jobs.js';
export { reconcileAmbiguous, reconcileSweepProcessor, type ReconcileSweepOptions, type SweptReceipt } from './sweep/reconcile-sweep.js';
export { idempotencyKeyFor } from '../core/identity.js';
export { withToolReceipts, type LockRenewalEvents, type ToolReceiptsOptions, type ToolReceiptsProcessor } from './processor.js';
export { type RecordedToolResult } from './runtime.js';
export {
  offloadOwnerOf,
  offloadSessionOf,
  readToolResultTool,
  ToolErrorResult,
  type ResultShapingOptions,
} from './tools/result-shaping.js';
export { type InputRepairOptions } from './tools/input.js';
export {
  PARTIAL_RESULTS_LOG_PREFIX,
  formatPartialResultsLog,
  parsePartialResultsLog,
  type PartialResults,
} from './turn/partial-results.js';
export {
  NOOP_OBSERVER,
  type ToolCallObserver,
  type CallObservation,
  type ObservedCall,
  type ObservedDecision,
  type ObservedEnd,
  type ObservedFailure,
  type ObserverBinding,
  type ReceiptRoundTrip,
} from './call/facts.js';
