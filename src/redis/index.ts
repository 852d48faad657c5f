/**
 * The `redis` layer's public face (`bullmq-tool-receipts/redis`): the receipts
 * keyspace and its stores, errors and checks.
 */
export {
  ReceiptStore,
  DEFAULT_LEASE_MS,
  DEFAULT_RETENTION_MS,
  type ReceiptStoreOptions,
  type ClaimOptions,
  type ClaimResult,
  type Resolution,
  type SettleResult,
  type StandingFailure,
  type HeartbeatResult,
  type PrefetchedClaim,
  type AmbiguousWalkOptions,
} from './receipts/store.js';
export { ReceiptQueries } from './receipts/reads/read-side.js';
export { ReceiptsKeyspace, type ReceiptsKeyspaceOptions } from './receipts/keyspace.js';
export { ReceiptsChannel, type CommandSite } from './receipts/channel.js';
export type { KeyspaceSettings, KeyspaceSettingsInput, ReceiptLayout } from './settings.js';
export {
  type ReceiptRecord,
  type ReceiptApproval,
  type ApprovalStatus,
  type ReceiptRecordStatus,
  isApprovalStatus,
  type AttemptJob,
  type ReconcileVerdict,
  type ReconcileRecord,
  type ReceiptHistoryEntry,
  type ReceiptHistoryWhat,
  RECEIPT_HISTORY_CAP,
} from './receipts/reads/record.js';
export { RESOLUTION_BY_MAX, RESOLUTION_NOTE_MAX } from './receipts/store-types.js';
export { ReceiptReader, type AmbiguousScan, type RunRange } from './receipts/reads/inspect.js';
export { type ReceiptStats, type ReceiptCount } from './runs/counts.js';
export { type RebuildSummary } from './runs/count-scan.js';
export {
  RunRegistry,
  RUN_REGISTRY_SHARDS,
  REGISTRATION_GRACE_MS,
  runRegistryRedisKey,
  runRegistryShardKey,
  type RegisteredRun,
} from './runs/registry.js';
export {
  ReconcileStore,
  type ReconcileStoreOptions,
  type ReconcileStart,
  type KeyedRerun,
  type VerdictToRecord,
  type ReconcileFence,
} from './receipts/transitions/reconcile-store.js';
export { BreakerStore, type BreakerStoreOptions, type FailureRecord, type RejectionRecord } from './receipts/transitions/breaker-store.js';
export {
  FencedOutError,
  NotAmbiguousError,
  CorruptReceiptError,
  ReceiptVersionError,
  ORDINARY_RECEIPT_SCHEMA,
  LEAN_RECEIPT_SCHEMA,
  COMPACT_RECEIPT_SCHEMA,
  RECEIPT_SCHEMA_VERSION,
  ContestedReceiptError,
  type AttemptFence,
  ReceiptValueNotSerializableError,
  InvalidReceiptInputError,
  UnexpectedScriptReplyError,
  type ObservedFence,
  type ReceiptStatus,
} from './errors.js';
export {
  DEFAULT_KEY_PREFIX,
  InvalidKeyPrefixError,
  encodeKeyComponent,
  decodeKeyComponent,
  runHashTag,
  receiptRedisKey,
  runIndexRedisKey,
  receiptCountRedisKey,
  breakerRedisKey,
  breakerField,
  type BreakerFieldKind,
  receiptScanPattern,
} from './keys.js';
export {
  RedisTimeoutError,
  RedisConnectionLostError,
  RedisUnreachableError,
  ReceiptsRedisUnavailableError,
  type LostClaimRelease,
  type RedisStep,
} from './connection/unreachable.js';
export { LOST_CLAIM_RELEASE_BUDGET_MS, LOST_CLAIM_RELEASE_TRIES } from './receipts/transitions/lost-claims.js';
export {
  defineScripts,
  ScriptDefinitionError,
  ScriptIncludeError,
  type ScriptDefinition,
  type ScriptIncludeProblem,
} from './scripts/scripts.js';
export { type ClaimObservation } from './receipts/channel.js';
export {
  NoClusterMastersError,
  InvalidRedisConnectionError,
  checkedConnection,
  type RedisConnection,
  type ReceiptsConnection,
  type ReceiptsNode,
  type IoredisClient,
  type NodeRedisClient,
  type LuaScript,
  type ScriptFunction,
  type BatchEntry,
  type BatchReply,
  type RedisArg,
  type RedisClientKind,
} from './connection/connection.js';
export {
  DEFAULT_DURABILITY_TIMEOUT_MS,
  DurabilityUnsupportedError,
  InvalidDurabilityOptionsError,
  ReceiptNotDurableError,
  durabilityOptions,
  type DurabilityOptions,
  type DurableWrite,
} from './durability/durability.js';
export {
  checkRedisForReceipts,
  DEFAULT_CHECK_TIMEOUT_MS,
  RedisCheckFailedError,
  type CheckRedisOptions,
  RECEIPT_RISKS,
  type FindingStatus,
  type ReceiptRisk,
  type RedisFinding,
  type RedisReport,
} from './operators/doctor.js';
export {
  adviseOnMemory,
  DEFAULT_MEMORY_SAMPLES,
  type ListpackLimits,
  type MemoryAdvice,
  type MemoryAdviceOptions,
  type MemoryNote,
  type MemoryReport,
  type ReceiptMemorySample,
} from './operators/memory-advice.js';
