/** The names of the spans' attributes and of the metrics `toolReceiptsOtel` records. */

/** Span and metric attribute keys. */
export const ATTR = {
  tenant: 'tool_receipts.tenant',
  run: 'tool_receipts.run',
  tool: 'tool_receipts.tool',
  callId: 'tool_receipts.call_id',
  jobId: 'tool_receipts.job_id',
  attempt: 'tool_receipts.attempt',
  decision: 'tool_receipts.decision',
  outcome: 'tool_receipts.outcome',
  receiptKey: 'tool_receipts.receipt_key',
  tier: 'tool_receipts.tier',
  during: 'tool_receipts.during',
  prefix: 'tool_receipts.prefix',
  verdict: 'tool_receipts.reconcile.verdict',
  limit: 'tool_receipts.limit',
  limitPer: 'tool_receipts.limit.per',
  approval: 'tool_receipts.approval.state',
  onLimit: 'tool_receipts.limit.on_limit',
  retryAtMs: 'tool_receipts.limit.retry_at_ms',
} as const;

/** Metric instrument names. */
export const METRIC = {
  calls: 'tool_receipts.calls',
  toolDuration: 'tool_receipts.tool.duration',
  overhead: 'tool_receipts.wrapper.overhead',
  fencedOut: 'tool_receipts.fenced_out',
  lateSettles: 'tool_receipts.late_settles',
  ambiguous: 'tool_receipts.ambiguous',
  limitUsed: 'tool_receipts.limit.used',
  limitLeft: 'tool_receipts.limit.left',
} as const;

/** Span event names. */
export const EVENT = {
  wait: 'wait',
  fencedOut: 'fenced_out',
  abort: 'abort',
  ambiguous: 'ambiguous',
  outcomeUnknown: 'outcome_unknown',
  lateSettle: 'late_settle',
  reconcile: 'reconcile',
  keyedRerun: 'keyed_rerun',
  /** A call's approval gate: requested, approved, denied or expired (`tool_receipts.approval.state`). */
  approval: 'approval',
  /** A limit refused the call or parked its job (`tool_receipts.limit`, `.limit.on_limit`, `.limit.retry_at_ms`). */
  overLimit: 'over_limit',
} as const;

/** Instrumentation scope name of the tracer and meter. */
export const SCOPE = 'bullmq-tool-receipts';
