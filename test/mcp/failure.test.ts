/**
 * classifyMcpFailure on the errors the MCP SDK really produces: a client
 * that is not connected, a refused TCP connection, an HTTP endpoint's 4xx
 * and 5xx, JSON-RPC errors, the SDK's own timeout and closed connection.
 */
import { createServer } from 'node:http';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { NeverStartedError, OutcomeUnknownError, ToolRefusedError } from '../../src/index.js';
import { classifyMcpFailure, mcpFailureError } from '../../src/mcp/index.js';
import { freePort } from '../support/ports.js';

const callOn = (client: Client) =>
  client.request({ method: 'tools/call', params: { name: 'x', arguments: {} } }, CallToolResultSchema).then(
    () => undefined,
    (error: unknown) => error,
  );

/** An HTTP endpoint that answers every request with `status`. */
async function answering(status: number): Promise<{ url: URL; close(): Promise<void> }> {
  const server = createServer((_req, res) => res.writeHead(status).end('no'));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address() as { port: number };
  return { url: new URL(`http://127.0.0.1:${address.port}/mcp`), close: () => new Promise((resolve) => server.close(() => resolve())) };
}

describe('classifyMcpFailure', () => {
  it('a client with no connection never sent anything: the server was unreachable, which the breaker does not count', async () => {
    const error = await callOn(new Client({ name: 't', version: '1' }));
    expect(classifyMcpFailure(error)).toBe('unreachable');
    const thrown = mcpFailureError('x', error);
    expect(thrown).toBeInstanceOf(NeverStartedError);
    expect((thrown as NeverStartedError).unreachable).toBe(true);
  });

  it('a refused TCP connection or a 404 (no such session) never reached a session; another 4xx was turned away; a 5xx may have run', async () => {
    const port = await freePort();
    const refused = await new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${port}/mcp`))
      .send({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'x' } })
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(classifyMcpFailure(refused)).toBe('unreachable');
    for (const [status, kind] of [
      [404, 'unreachable'],
      [401, 'neverStarted'],
      [429, 'neverStarted'],
      [500, 'unknown'],
      [502, 'unknown'],
    ] as const) {
      const endpoint = await answering(status);
      const error = await new StreamableHTTPClientTransport(endpoint.url)
        .send({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'x' } })
        .then(
          () => undefined,
          (e: unknown) => e,
        );
      await endpoint.close();
      expect(classifyMcpFailure(error), `HTTP ${status}`).toBe(kind);
      if (kind !== 'unknown')
        expect((mcpFailureError('x', error) as NeverStartedError).unreachable, `HTTP ${status}`).toBe(kind === 'unreachable');
    }
  });

  it('JSON-RPC errors: a bad request is refused, another server error is a failure, a closed connection or timeout is unknown', () => {
    expect(classifyMcpFailure(new McpError(ErrorCode.InvalidParams, 'bad'))).toBe('refused');
    expect(classifyMcpFailure(new McpError(ErrorCode.MethodNotFound, 'no'))).toBe('refused');
    expect(mcpFailureError('x', new McpError(ErrorCode.InvalidParams, 'bad'))).toBeInstanceOf(ToolRefusedError);
    expect(classifyMcpFailure(new McpError(ErrorCode.InternalError, 'boom'))).toBe('failed');
    expect(classifyMcpFailure(new McpError(-31999, 'app error'))).toBe('failed');
    expect(classifyMcpFailure(new McpError(ErrorCode.ConnectionClosed, 'Connection closed'))).toBe('unknown');
    expect(classifyMcpFailure(new McpError(ErrorCode.ConnectionClosed, 'Request was cancelled'))).toBe('unknown');
    // -32000 is also the generic server error a server sends back: the tool's failure, not a lost connection.
    expect(classifyMcpFailure(new McpError(-32000, 'upstream database unavailable'))).toBe('failed');
    expect(classifyMcpFailure(new McpError(ErrorCode.RequestTimeout, 'Request timed out'))).toBe('unknown');
    expect(mcpFailureError('x', new McpError(ErrorCode.RequestTimeout, 't'))).toBeInstanceOf(OutcomeUnknownError);
    // A read-only tool changed nothing: its unknown outcome is a plain failure, run again.
    const readOnly = mcpFailureError('x', new McpError(ErrorCode.RequestTimeout, 't'), true);
    expect(readOnly).not.toBeInstanceOf(OutcomeUnknownError);
    expect(readOnly.message).toMatch(/may have reached the server/);
  });

  it('anything unrecognised is unknown', () => {
    expect(classifyMcpFailure(new Error('socket hang up'))).toBe('unknown');
    expect(classifyMcpFailure('a string')).toBe('unknown');
    expect(classifyMcpFailure(new TypeError('fetch failed', { cause: { code: 'UND_ERR_SOCKET' } }))).toBe('unknown');
  });
});
