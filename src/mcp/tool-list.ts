/**
 * Reaching the server before any call: a connected client within
 * `connectTimeoutMs`, and every page of `tools/list`, each page within the
 * same limit, so a server that never answers fails `mcpTools` in that time.
 */
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import type { McpClientSource } from './connection.js';
import { McpConnectError, McpToolListError } from './errors.js';
import { REQUEST_TIMEOUT } from './failure.js';

/** A connected client from `clients`, or `McpConnectError` when it does not come within `timeoutMs`. */
export async function connectedClient(clients: McpClientSource, timeoutMs: number): Promise<Client> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () =>
        reject(new McpConnectError(`the MCP server did not connect (connect and initialize) within ${timeoutMs} ms (connectTimeoutMs)`)),
      timeoutMs,
    );
  });
  try {
    return await Promise.race([clients.client(), late]);
  } catch (error) {
    if (error instanceof McpConnectError) throw error;
    throw new McpConnectError(`could not get a connected MCP client: ${error instanceof Error ? error.message : String(error)}`, {
      cause: error,
    });
  } finally {
    clearTimeout(timer);
  }
}

/** Every page of `tools/list`, in order; each page must come within `pageTimeoutMs`. */
export async function listAllTools(client: Client, maxPages: number, pageTimeoutMs: number): Promise<Tool[]> {
  const tools: Tool[] = [];
  const seen = new Set<string>();
  let cursor: string | undefined;
  for (let page = 0; page < maxPages; page++) {
    let answer: Awaited<ReturnType<Client['listTools']>>;
    try {
      answer = await client.listTools(cursor === undefined ? {} : { cursor }, { timeout: pageTimeoutMs, maxTotalTimeout: pageTimeoutMs });
    } catch (cause) {
      const timedOut = cause instanceof Error && cause.name === 'McpError' && (cause as { code?: unknown }).code === REQUEST_TIMEOUT;
      const why = timedOut
        ? `no answer within ${pageTimeoutMs} ms (connectTimeoutMs)`
        : cause instanceof Error
          ? cause.message
          : String(cause);
      throw new McpToolListError(`tools/list failed on page ${page + 1}: ${why}`, { cause });
    }
    tools.push(...answer.tools);
    cursor = answer.nextCursor;
    if (cursor === undefined) return tools;
    if (seen.has(cursor))
      throw new McpToolListError(`tools/list returned the cursor ${JSON.stringify(cursor.slice(0, 100))} twice; the list never ends`);
    seen.add(cursor);
  }
  throw new McpToolListError(`tools/list has more than ${maxPages} pages; raise maxPages to read them all`);
}
