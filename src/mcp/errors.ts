/**
 * The errors of the MCP tools: options it cannot use, and calls the server
 * failed.
 */
import { ToolReceiptsError } from '../core/errors.js';

/** `mcpTools` was given options it cannot use; the message names the option and what to pass. */
export class InvalidMcpToolsOptionsError extends ToolReceiptsError {
  readonly code = 'mcp.invalid_options';
}

/**
 * An MCP server's tool cannot be offered safely: its `inputSchema` cannot be
 * compiled into a validator, so its arguments could not be checked before a
 * receipt is claimed. Give the tool an `input` zod schema in the options, or
 * leave it out with `include`.
 */
export class McpToolSchemaError extends ToolReceiptsError {
  readonly code = 'mcp.schema_unsupported';
  constructor(
    readonly tool: string,
    reason: string,
    options?: { cause?: unknown },
  ) {
    super(
      `MCP tool ${JSON.stringify(tool)}: its inputSchema cannot be used to check arguments (${reason}); give it an \`input\` zod schema in mcpTools' options or leave it out with \`include\``,
      options,
    );
  }
}

/** The server's `tools/list` answer could not be read whole (a page failed, or the cursors loop). */
export class McpToolListError extends ToolReceiptsError {
  readonly code = 'mcp.tool_list';
}

/** A connection's `connect` function failed or returned something that is not a connected client. */
export class McpConnectError extends ToolReceiptsError {
  readonly code = 'mcp.connect';
}
