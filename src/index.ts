/**
 * bullmq-tool-receipts: at-most-once side effects for AI-agent tool calls run
 * as BullMQ jobs. This root entry holds what a worker needs: defining tools,
 * wrapping them into a processor, the digests, the job shapes, and the errors
 * a tool or host branches on. Each layer has its own entry for the rest:
 * `/core` (pure: identity, decisions, tiers, the resume journal), `/redis`
 * (the receipt and breaker stores), `/offload` (large results), `/repair`
 * (argument repair), `/client` (the agent's side) and `/testing` (the store
 * contract and a job stand-in).
 */
export * from './bullmq/index.js';
export { ToolReceiptsError } from './core/errors.js';
export { TOOL_RECEIPTS_ERROR_CODES, isToolReceiptsErrorCode, type ToolReceiptsErrorCode } from './core/error-codes.js';
export { sha256Digest, hmacSha256Digest, InvalidDigestSecretError, type DigestFn } from './core/identity.js';
export { NeverStartedError, DestructiveRanError, OutcomeUnknownError, ToolRefusedError } from './core/tiers.js';
export { InvalidRedisConnectionError, type RedisConnection } from './redis/connection/connection.js';
export {
  checkRedisForReceipts,
  RedisCheckFailedError,
  type CheckRedisOptions,
  type RedisReport,
  type RedisFinding,
} from './redis/operators/doctor.js';
export { InvalidOptionsError } from './core/options.js';
export { DurabilityUnsupportedError, ReceiptNotDurableError, type DurabilityOptions } from './redis/durability/durability.js';
export {
  RedisTimeoutError,
  RedisConnectionLostError,
  RedisUnreachableError,
  ReceiptsRedisUnavailableError,
} from './redis/connection/unreachable.js';
export { RedisToolResultStore, type RedisToolResultStoreOptions } from './offload/redis-store.js';
export type { ToolResultStore } from './offload/types.js';
export type { Reshaper, ReshapeRequest } from './repair/reshaper.js';
export type { ApprovalContext, ApprovalOptions, ApprovalRule } from './approvals/types.js';
