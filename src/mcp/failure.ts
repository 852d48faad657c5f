import { NeverStartedError, OutcomeUnknownError, ToolRefusedError } from '../core/tiers.js';

/** JSON-RPC codes (and the SDK's own two) this module tells apart. */
const CONNECTION_CLOSED = -32000;
const REQUEST_TIMEOUT = -32001;
/** The server refused the request as written: it did not run the tool, and would refuse it again. */
const REFUSALS: ReadonlySet<number> = new Set([-32700, -32600, -32601, -32602]);

/** Socket errors that mean the request never left this machine (nothing listened, no such host). */
const NOT_SENT_CAUSES: ReadonlySet<string> = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'UND_ERR_CONNECT_TIMEOUT']);

/**
 * What a failed `tools/call` means for the call's effect:
 * - `neverStarted`: the request cannot have reached the server (the client
 *   was not connected, the connection was refused, the HTTP endpoint turned
 *   it away with a 4xx before the MCP server read it), so running it again
 *   is safe;
 * - `refused`: the server answered with a JSON-RPC error saying the request
 *   itself was wrong (unknown tool, invalid params): nothing ran, and the
 *   same request gets the same answer;
 * - `failed`: the server answered with another JSON-RPC error: it ran and
 *   reports a failure, as a tool that throws does;
 * - `unknown`: the request may have reached the server and its answer was
 *   lost (the connection closed, the request timed out, an answer that is
 *   not a `tools/call` result, anything not recognised).
 */
export type McpFailureKind = 'neverStarted' | 'refused' | 'failed' | 'unknown';

/** Classify what `tools/call` threw. Pure; reads only the error's own fields. */
export function classifyMcpFailure(error: unknown): McpFailureKind {
  if (!(error instanceof Error)) return 'unknown';
  // The SDK's Protocol.request and its transports say exactly this when there is no connection to send on.
  if (error.message === 'Not connected') return 'neverStarted';
  const code = (error as { code?: unknown }).code;
  if (error.name === 'McpError' && typeof code === 'number') {
    if (code === CONNECTION_CLOSED || code === REQUEST_TIMEOUT) return 'unknown';
    return REFUSALS.has(code) ? 'refused' : 'failed';
  }
  // StreamableHTTPError: the HTTP status of the POST. A 4xx (no session, unauthorised, too many
  // requests) is turned away before the MCP server reads the request; a 5xx may come after it ran.
  if (error.message.startsWith('Streamable HTTP error:') && typeof code === 'number') {
    return code >= 400 && code < 500 ? 'neverStarted' : 'unknown';
  }
  if (error.name === 'TypeError' && error.message === 'fetch failed') {
    const causeCode = (error.cause as { code?: unknown } | undefined)?.code;
    if (typeof causeCode === 'string' && NOT_SENT_CAUSES.has(causeCode)) return 'neverStarted';
  }
  return 'unknown';
}

/**
 * The error a tool throws for a failed `tools/call`, so the wrapper treats it
 * as {@link classifyMcpFailure} says: `NeverStartedError` (safe to retry),
 * `ToolRefusedError` (an error result, not retried), the error as it is (a
 * tool failure), or `OutcomeUnknownError` (ambiguous for an opaque tool,
 * taken over and run again for an idempotent one). For a read-only tool an
 * unknown outcome is a plain error: it changed nothing, so the job runs it
 * again like any read-only failure.
 */
export function mcpFailureError(tool: string, error: unknown, readOnly = false): Error {
  const text = error instanceof Error ? error.message : String(error);
  switch (classifyMcpFailure(error)) {
    case 'neverStarted':
      return new NeverStartedError(`MCP tool ${tool} was not called: ${text}`, { cause: error });
    case 'refused':
      return new ToolRefusedError(`The MCP server refused the call to ${tool}: ${text}`, { cause: error });
    case 'failed':
      return error instanceof Error ? error : new Error(text);
    case 'unknown': {
      const message = `the MCP request to ${tool} may have reached the server, but no answer was read: ${text}`;
      return readOnly ? new Error(message, { cause: error }) : new OutcomeUnknownError(message, { cause: error });
    }
  }
}
