/**
 * Reaching the upstream servers: one reconnecting MCP connection per
 * upstream, and the `mcpTools` options that make its tools, the same in the
 * front (which lists and checks them) and in every worker (which runs them),
 * so both give each tool the same name, schema and effect class.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult, Tool } from '@modelcontextprotocol/sdk/types.js';
import type { Logger } from 'pino';
import { McpConnection } from '../mcp/connection.js';
import { DEFAULT_MCP_CONNECT_TIMEOUT_MS, type McpToolOptions, type McpToolsOptions } from '../mcp/options.js';
import { connectedClient, listAllTools } from '../mcp/tool-list.js';
import type { GatewayConfig, UpstreamConfig } from './config.js';

/** The name the gateway gives itself as an MCP client of its upstreams. */
const CLIENT_INFO = { name: 'bullmq-tool-receipts-gateway', version: '1' } as const;

/**
 * The longest message a stdio upstream may send (the SDK's reader holds 10
 * MiB by default). Past it the SDK closes the transport, which ends the
 * upstream and every call running on it as a crash would: one large result
 * must not do that to the calls beside it, so the bound is well above any
 * result the gateway keeps (`maxResultChars`, cut after it is read).
 */
export const STDIO_MAX_MESSAGE_BYTES = 256 * 1024 * 1024;

/** Every tool the upstream lists (`tools/list`, all pages), as the front's catalog and a worker's start read them. */
export async function listUpstreamTools(connection: McpConnection): Promise<Tool[]> {
  const client = await connectedClient(connection, DEFAULT_MCP_CONNECT_TIMEOUT_MS);
  return await listAllTools(client, 100, DEFAULT_MCP_CONNECT_TIMEOUT_MS);
}

/** The tools `upstream`'s config sets that its listed tools (`listed`, their names) do not hold, in the config's order. */
export function unlistedTools(upstream: UpstreamConfig, listed: ReadonlySet<string>): string[] {
  return Object.keys(upstream.tools).filter((name) => !listed.has(name));
}

/** A reconnecting connection to one upstream (stdio: the server is spawned, its stderr joins the gateway's). */
export function upstreamConnection(upstream: UpstreamConfig): McpConnection {
  const { transport } = upstream;
  return new McpConnection(async () => {
    const client = new Client(CLIENT_INFO);
    if (transport.kind === 'stdio') {
      await client.connect(
        new StdioClientTransport({
          command: transport.command,
          args: [...transport.args],
          env: { ...transport.env },
          cwd: transport.cwd,
          stderr: 'inherit',
          maxBufferSize: STDIO_MAX_MESSAGE_BYTES,
        }),
      );
    } else {
      await client.connect(
        new StreamableHTTPClientTransport(new URL(transport.url), { requestInit: { headers: { ...transport.headers } } }),
      );
    }
    return client;
  });
}

/**
 * The `mcpTools` options of one upstream: its prefix, its tools' settings,
 * approval (`approval: "destructive"` in the config: every tool the wrapper
 * treats as destructive waits for a person, unless its own `approval` says
 * otherwise), and where the worker records results.
 */
export function upstreamToolsOptions(
  upstream: UpstreamConfig,
  config: GatewayConfig,
  logger: Logger,
  renderResult?: (result: CallToolResult) => unknown,
): McpToolsOptions {
  const tools: Record<string, McpToolOptions> = {};
  for (const [name, settings] of Object.entries(upstream.tools)) {
    const { approval, ...rest } = settings;
    tools[name] = { ...rest, ...(approval === undefined ? {} : { approval: approval ? 'always' : false }) };
  }
  return {
    namePrefix: upstream.namePrefix,
    trustAnnotations: upstream.trustAnnotations,
    tools,
    ...(upstream.include === undefined ? {} : { include: upstream.include }),
    ...(upstream.timeoutMs === undefined ? {} : { timeoutMs: upstream.timeoutMs }),
    ...(config.approval === 'destructive' ? { approval: 'destructive' as const } : {}),
    ...(config.approvals.timeoutMs === undefined ? {} : { approvalTimeoutMs: config.approvals.timeoutMs }),
    ...(renderResult === undefined ? {} : { renderResult }),
    logger,
  };
}
