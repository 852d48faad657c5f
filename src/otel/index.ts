/**
 * bullmq-tool-receipts/otel: OpenTelemetry spans and metrics for the
 * wrapper. This entry point is the only one that imports
 * `@opentelemetry/api` (an optional peer dependency).
 */
export { toolReceiptsOtel, OtelObserver, type ToolReceiptsOtelOptions } from './observer.js';
export { OpenReceiptIndex, DEFAULT_OPEN_INDEX_SHARDS } from './open-receipts.js';
export { outcomeOf, type CallOutcomeLabel, type SeenMilestones } from './outcome.js';
export { ATTR, METRIC, EVENT, SCOPE } from './names.js';
