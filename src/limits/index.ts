/**
 * `bullmq-tool-receipts/limits`: limits the whole fleet keeps, counted at
 * the execution. The definitions and their checks (pure), the window math,
 * the key layout, and the {@link LimitStore} that reserves, binds, commits,
 * gives back, settles, reads and resets the counts on Redis. This layer sits
 * on `/redis`; the worker's wrapper builds on it. See docs/limits.md.
 */
export {
  checkLimits,
  costOf,
  defineLimit,
  LIMIT_NAME,
  LimitCostError,
  limitsOfTool,
  MAX_BUCKET_SPAN,
  MAX_LIMIT_WINDOW_MS,
  type AnyLimit,
  type AnyLimitDefinition,
  type Limit,
  type LimitCost,
  type LimitDefinition,
  type LimitKind,
  type LimitScope,
  type OnLimit,
} from './definitions.js';
export { durationText, fitsWindow, limitRefusalText, limitWindow, type LimitRefusalFacts, type LimitWindow } from './window.js';
export {
  limitBindingField,
  limitBindingsRedisKey,
  limitRedisKeys,
  capRedisKeys,
  type CapKeys,
  limitScanPattern,
  limitIndexRedisKey,
  parseLimitRedisKey,
  type LimitKeys,
  type LimitSubject,
  type ParsedLimitKey,
} from './keys.js';
export {
  DEFAULT_RESERVATION_MS,
  LimitStore,
  type BindResult,
  type LimitReservation,
  type LimitResetBy,
  type LimitStoreOptions,
  type LimitUsage,
  type ReserveResult,
  type SettledReservation,
} from './limit-store.js';
export {
  limitCall,
  LimitedCall,
  WorkerLimits,
  type LimitGate,
  type LimitRefusal,
  type LimitVerdict,
  type ToolLimits,
} from './call-limits.js';
export { limitOfCount, listLimitCounts, type LimitCount, type LimitCountFilter } from './limit-counts.js';
export { listCapCounts, type CapCount } from './cap-counts.js';
export { LimitIndex, LIMIT_INDEX_READ } from './limit-index.js';
export { CapSlotLostError, isCap, type InFlightCap, type InFlightCapDefinition } from './caps.js';
export { CapStore, type CapUsage, type SlotAnswer, type SlotRequest } from './cap-store.js';
export { capCall, HeldSlots, type CapGate, type SlotOptions } from './cap-call.js';
