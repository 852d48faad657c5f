/**
 * Every `code` a user of this package can meet, as one list at run time and
 * one string-literal union at compile time, so a `switch` over
 * `ToolReceiptsError['code']` can be exhaustive and a code that is added or
 * removed shows up as a type error in the caller's code, not as a surprise
 * in production. Codes never change meaning between releases; new ones may
 * be added (a minor release), none is reused.
 */
export const TOOL_RECEIPTS_ERROR_CODES = [
  // The job and its calls, met by a worker.
  'job.invalid_data',
  'job.lock_lost',
  'job.cancelled',
  'receipt.ambiguous',
  'tool.failed',
  'options.invalid',
  'redis.invalid_connection',
  'digest.invalid_secret',
  // Thrown by a tool to say how it failed.
  'tool.never_started',
  'tool.outcome_unknown',
  'tool.refused',
  'tool.destructive_ran',
  // Defining tools and repairing their arguments.
  'tool.invalid_definition',
  'tool.schema_unsupported',
  'tool.duplicate_name',
  'tool_args.alias_conflict',
  'tool_args.invalid_alias',
  // Digests and names.
  'canonical_json.unsupported_type',
  'canonical_json.non_finite_number',
  'canonical_json.cycle',
  'canonical_json.too_deep',
  'identity.malformed_name',
  // The receipt store.
  'receipt.fenced_out',
  'receipt.corrupt',
  'receipt.version',
  'receipt.not_ambiguous',
  'receipt.contested',
  'receipt.not_settled',
  'receipt.not_serializable',
  'receipt.invalid_input',
  'receipt.invalid_prefix',
  'receipt.unexpected_reply',
  // Durability and the Redis connection.
  'durability.unsupported',
  'durability.not_acknowledged',
  'redis.no_cluster_masters',
  'redis.timeout',
  'redis.unavailable',
  'redis.unreachable',
  'redis.script_definition',
  'redis.script_include',
  // Offloaded results.
  'tool_result.unsafe_ref',
  'tool_result.invalid_ref_segment',
  'tool_result.invalid_provenance',
  'tool_result.ref_conflict',
  // Limits (`/limits`).
  'limit.invalid_cost',
  'limit.slot_lost',
  // Approvals (`/approvals`).
  'approval.not_pending',
  'approval.stale_lifetime',
  'approval.args_mismatch',
  'approval.expired',
  // The agent's side (`/client`).
  'turn.ambiguous',
  'turn.timeout',
  'turn.aborted',
  'turn.failed',
  'turn.invalid_data',
  'turn.conflict',
  'turn.invalid_id',
  'turn.invalid_timeout',
  'client.mismatched_events',
  'format.invalid_message',
  'format.result_count',
  'tool.error_result',
  // Agent frameworks' tools (`/ai-sdk`, `/openai-agents`, `/mastra`, `/langgraph`).
  'framework.approval_refused',
  // MCP tools (`/mcp`).
  'mcp.invalid_options',
  'mcp.schema_unsupported',
  'mcp.tool_list',
  'mcp.connect',
  // Transactional tools on PostgreSQL (`/transactional`).
  'transactional.invalid_attempt',
  'transactional.table_missing',
  'transactional.table_mismatch',
  'transactional.not_committed',
  'transactional.outcome_unknown',
  // The operator console (`/console`).
  'console.token_required',
  'console.invalid_options',
  // The operator CLI (`--json` prints `{"error":{"code","message"}}`).
  'cli.usage',
  'cli.invalid_receipt_key',
  'cli.receipt_not_found',
  'cli.resolve_refused',
  'cli.redis_unavailable',
  'cli.redis_error',
  'cli.postgres_error',
  'cli.unexpected',
] as const;

/** One of {@link TOOL_RECEIPTS_ERROR_CODES}: the `code` of a `ToolReceiptsError`, or one the CLI prints. */
export type ToolReceiptsErrorCode = (typeof TOOL_RECEIPTS_ERROR_CODES)[number];

const KNOWN: ReadonlySet<string> = new Set(TOOL_RECEIPTS_ERROR_CODES);

/** Whether `value` is one of this package's error codes (e.g. a `code` read back from the CLI's `--json`). */
export function isToolReceiptsErrorCode(value: unknown): value is ToolReceiptsErrorCode {
  return typeof value === 'string' && KNOWN.has(value);
}
