/**
 * The MCP server one client talks to (one per HTTP session, one per stdio
 * connection), built on the SDK's low-level `Server`: `tools/list` answers
 * the catalog, `tools/call` goes to the front's calls. It offers tools only.
 */
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { CallToolRequestSchema, ElicitResultSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { answerCall, type GatewayCalls } from './calls.js';
import type { CallScope } from './scope.js';

/** How the gateway names itself to its clients. */
export const GATEWAY_SERVER_INFO = { name: 'bullmq-tool-receipts-gateway', version: '1' } as const;

/** The tenant and scope every call of this server is made in. */
export interface ServerSession {
  readonly tenant: string;
  readonly scope: CallScope;
}

/** A server for one client: every call it takes is the session's tenant's, in its scope. */
export function gatewayServer(calls: GatewayCalls, session: ServerSession): Server {
  const server = new Server(GATEWAY_SERVER_INFO, {
    capabilities: { tools: { listChanged: false } },
    instructions:
      'Each tool call runs at most once. A call sent again with the same arguments (in the same session, or under the same _meta run id and call id) is the same call: it waits for, or replays, the first one, and never runs twice.',
  });
  server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: calls.catalog.listed() }));
  server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    const progressToken = request.params._meta?.progressToken;
    let progress = 0;
    const elicits = calls.config.approvals.elicit && server.getClientCapabilities()?.elicitation?.form !== undefined;
    const clientName = server.getClientVersion()?.name;
    return answerCall(calls, request.params, {
      tenant: session.tenant,
      scope: session.scope,
      signal: extra.signal,
      ...(clientName ? { clientName } : {}),
      ...(progressToken === undefined
        ? {}
        : {
            stillWorking: () =>
              extra.sendNotification({
                method: 'notifications/progress',
                params: { progressToken, progress: ++progress, message: 'the call is still running or waiting for approval' },
              }),
          }),
      ...(elicits
        ? {
            ask: (params) =>
              extra.sendRequest({ method: 'elicitation/create', params }, ElicitResultSchema, {
                timeout: Math.max(calls.config.approvals.waitMs, 1000),
              }),
          }
        : {}),
    });
  });
  return server;
}
