/**
 * bullmq-tool-receipts/mcp: an MCP server's tools as tool definitions the
 * wrapper runs at most once. This entry point is the only one that imports
 * `@modelcontextprotocol/sdk` (an optional peer dependency).
 */
export {
  mcpTools,
  MCP_IDEMPOTENCY_KEY_META,
  DEFAULT_MCP_CALL_TIMEOUT_MS,
  DEFAULT_MCP_CONNECT_TIMEOUT_MS,
  type McpToolsOptions,
  type McpToolOptions,
  type McpToolDefinition,
  type McpApproval,
  type McpReconcileContext,
} from './tools.js';
export { McpConnection, type McpClientSource } from './connection.js';
export { DEFAULT_MCP_RECONNECT_DELAY_MS, DEFAULT_MCP_MAX_RECONNECT_DELAY_MS, type McpConnectionOptions } from './options.js';
export { modelToolNames } from './tool-names.js';
export { resolveMcpEffect, type McpEffectClass, type McpEffectOverride, type ResolvedMcpEffect } from './effect.js';
export { classifyMcpFailure, mcpFailureError, type McpFailureKind } from './failure.js';
export { mcpInputSchema } from './input-schema.js';
export { mcpResultForModel } from './result.js';
export { InvalidMcpToolsOptionsError, McpToolSchemaError, McpToolListError, McpConnectError } from './errors.js';
