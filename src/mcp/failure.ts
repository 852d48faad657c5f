/**
 * What an MCP server's failure means for a call: a closed connection or
 * timeout versus the tool's own error.
 */
import { NeverStartedError, OutcomeUnknownError, ToolRefusedError } from '../core/tiers.js';

/** JSON-RPC codes (and the SDK's own two) this module tells apart. */
const CONNECTION_CLOSED = -32000;
/**
 * What the SDK itself says under CONNECTION_CLOSED: -32000 is also the
 * generic "server error" a server sends back, which is the tool's failure,
 * so the code alone cannot say the connection went.
 */
const CLOSED_LOCALLY: ReadonlySet<string> = new Set([
  `MCP error ${CONNECTION_CLOSED}: Connection closed`,
  `MCP error ${CONNECTION_CLOSED}: Request was cancelled`,
]);
/** The MCP SDK's code for a request that got no answer in its time. */
export const REQUEST_TIMEOUT = -32001;
/** The server refused the request as written: it did not run the tool, and would refuse it again. */
const REFUSALS: ReadonlySet<number> = new Set([-32700, -32600, -32601, -32602]);

/** Socket errors that mean the request never left this machine (nothing listened, no such host). */
const NOT_SENT_CAUSES: ReadonlySet<string> = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'UND_ERR_CONNECT_TIMEOUT',
]);

/** The HTTP status a Streamable HTTP server answers for a session it does not know (MCP spec: start a new one). */
export const SESSION_NOT_FOUND = 404;

/**
 * What a failed `tools/call` means for the call's effect:
 * - `unreachable`: the request never reached an MCP server session: the
 *   client was not connected, the connection was refused, or the endpoint
 *   answered HTTP 404 (it does not know the session, as after a restart).
 *   Running it again is safe, and the failure is the server's absence, not
 *   the tool's;
 * - `neverStarted`: the HTTP endpoint turned the request away with another
 *   4xx (unauthorised, too many requests) before the MCP server read it, so
 *   running it again is safe;
 * - `refused`: the server answered with a JSON-RPC error saying the request
 *   itself was wrong (unknown tool, invalid params): nothing ran, and the
 *   same request gets the same answer;
 * - `failed`: the server answered with another JSON-RPC error: it ran and
 *   reports a failure, as a tool that throws does;
 * - `unknown`: the request may have reached the server and its answer was
 *   lost (the connection closed, the request timed out, an answer that is
 *   not a `tools/call` result, anything not recognised).
 */
export type McpFailureKind = 'unreachable' | 'neverStarted' | 'refused' | 'failed' | 'unknown';

/** The HTTP status of a Streamable HTTP POST or GET the endpoint refused (the SDK's `StreamableHTTPError`), if `error` is one. */
export function httpStatusOf(error: unknown): number | undefined {
  if (!(error instanceof Error) || !error.message.startsWith('Streamable HTTP error:')) return undefined;
  const code = (error as { code?: unknown }).code;
  return typeof code === 'number' && code >= 100 && code < 600 ? code : undefined;
}

/** Classify what `tools/call` threw. Pure; reads only the error's own fields. */
export function classifyMcpFailure(error: unknown): McpFailureKind {
  if (!(error instanceof Error)) return 'unknown';
  // The SDK's Protocol.request and its transports say exactly this when there is no connection to send on.
  if (error.message === 'Not connected') return 'unreachable';
  const code = (error as { code?: unknown }).code;
  if (error.name === 'McpError' && typeof code === 'number') {
    // A timeout is the SDK's (a server has no reason to send -32001); a -32000 only when the SDK wrote it.
    if (code === REQUEST_TIMEOUT || (code === CONNECTION_CLOSED && CLOSED_LOCALLY.has(error.message))) return 'unknown';
    return REFUSALS.has(code) ? 'refused' : 'failed';
  }
  // StreamableHTTPError: the HTTP status of the POST. A 4xx (no session, unauthorised, too many
  // requests) is turned away before the MCP server reads the request; a 5xx may come after it ran.
  const status = httpStatusOf(error);
  if (status !== undefined)
    return status === SESSION_NOT_FOUND ? 'unreachable' : status >= 400 && status < 500 ? 'neverStarted' : 'unknown';
  if (error.name === 'TypeError' && error.message === 'fetch failed') {
    const causeCode = (error.cause as { code?: unknown } | undefined)?.code;
    if (typeof causeCode === 'string' && NOT_SENT_CAUSES.has(causeCode)) return 'unreachable';
  }
  return 'unknown';
}

/**
 * The error a tool throws for a failed `tools/call`, so the wrapper treats it
 * as {@link classifyMcpFailure} says: `NeverStartedError` (safe to retry;
 * with `unreachable` set when the server could not be reached, which the
 * run's breaker does not count), `ToolRefusedError` (an error result, not
 * retried), the error as it is (a tool failure), or `OutcomeUnknownError`
 * (ambiguous for an opaque tool, taken over and run again for an idempotent
 * one). For a read-only tool an unknown outcome is a plain error: it changed
 * nothing, so the job runs it again like any read-only failure.
 */
export function mcpFailureError(tool: string, error: unknown, readOnly = false): Error {
  const text = error instanceof Error ? error.message : String(error);
  switch (classifyMcpFailure(error)) {
    case 'unreachable':
      return new NeverStartedError(`MCP tool ${tool} was not called: the server could not be reached (${text})`, {
        cause: error,
        unreachable: true,
      });
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
