/**
 * Offloading of large tool results: refs, previews, result shaping, the
 * page-back tool, and the stores that keep the full text.
 */
export type {
  Awaitable,
  RetentionDeclaration,
  ToolResultDeletionReport,
  ToolResultProvenance,
  ToolResultSlice,
  ToolResultSliceOptions,
  ToolResultStore,
} from './types.js';
export {
  InvalidToolResultProvenanceError,
  InvalidToolResultRefSegmentError,
  TOOL_RESULT_REF_CONFLICT_CODE,
  ToolResultRefConflictError,
  ToolResultStoreConfigError,
  UnsafeToolResultRefError,
} from './errors.js';
export {
  assertSafeToolResultRef,
  buildToolResultRef,
  isSafeToolResultRef,
  MAX_MINTED_TOOL_RESULT_REF_CHARS,
  MAX_REF_SEGMENT_CHARS,
  MAX_TOOL_RESULT_REF_CHARS,
  mintedRefSessionSegment,
  NATIVE_REF_SEGMENT_CHARSET,
  REF_SEGMENT_SEPARATOR,
  TOOL_RESULT_REF_PREFIX,
  toolResultContentSegment,
  toolResultRefSegment,
} from './ref.js';
export {
  assertToolResultProvenanceMatch,
  normalizeToolResultProvenance,
  sameToolResultOwner,
  toolResultProvenanceOf,
} from './provenance.js';
export {
  buildPreview,
  DEFAULT_PREVIEW_SIZES,
  isOffloadedDetailReplacement,
  isOffloadPreview,
  OFFLOAD_TOOL_NAME,
  OFFLOADED_DETAIL_NOTICE_PREFIX,
  offloadedDetailNotice,
  offloadPagebackHint,
  PERSISTED_OUTPUT_PREFIX,
  PERSISTED_OUTPUT_SUFFIX,
  type PreviewSizes,
} from './preview.js';
export { DEFAULT_TOOL_RESULT_CHARS, DEFAULT_TOOL_RESULT_THRESHOLD_CHARS, stringifyToolResult, unwrapToolResultForLlm } from './shaping.js';
export {
  capToolResultForLlm,
  previewWithinCap,
  toolResultCapper,
  truncateToolResultText,
  type CappedToolResult,
  type CapToolResultOptions,
  type ToolResultCall,
  type ToolResultSpillOptions,
} from './capper.js';
export {
  createReadToolResultTool,
  READ_TOOL_RESULT_DEFAULT_LIMIT,
  readToolResultInput,
  type ReadToolResultArgs,
  type ReadToolResultTool,
  type ReadToolResultToolOptions,
} from './read-tool.js';
export { DEFAULT_IN_MEMORY_MAX_TOTAL_CHARS, InMemoryToolResultStore, type InMemoryToolResultStoreOptions } from './memory-store.js';
export { DEFAULT_TOOL_RESULT_RETENTION_MS, RedisToolResultStore, type RedisToolResultStoreOptions } from './redis-store.js';
export { offloadHashKey, UNMINTED_HASH_TAG } from './redis-keys.js';
