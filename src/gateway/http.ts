/**
 * The gateway's Streamable HTTP front. Every request is checked before the
 * MCP SDK sees it, in this order: the `Host` it was sent to (421 unless
 * loopback or allowed: DNS rebinding), the path, a browser `Origin` (403
 * unless allowed), the bearer token (401; it names the tenant), the body's
 * size (413 over `maxRequestBytes`) and JSON (400). Then the request goes to
 * its session's transport: a new one for `initialize`, the live one for a
 * session id this process holds, or one taken up again for an id it issued
 * before (see sessions.ts).
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import { boundHosts, HostAllowList } from '../http/hosts.js';
import { originProblem } from '../http/origin.js';
import { bearerToken, sameSecret } from '../http/tokens.js';
import { InvalidOptionsError } from '../core/options.js';
import type { HttpFrontConfig } from './config.js';
import { newSessionId, readSessionId, SessionTable, type LiveSession, type ServerFactory } from './sessions.js';

/** A running HTTP front. */
export interface HttpFront {
  /** Where clients reach it: `http://127.0.0.1:8790/mcp`. */
  readonly url: string;
  readonly server: Server;
  close(): Promise<void>;
}

/** Serves the MCP endpoint until closed. */
export async function startHttpFront(
  http: HttpFrontConfig,
  maxRequestBytes: number,
  makeServer: ServerFactory,
  logger: Logger,
): Promise<HttpFront> {
  const hosts = new HostAllowList(
    [...http.allowedHosts, ...boundHosts(http.host)],
    (message) => new InvalidOptionsError('http', 'allowedHosts', message),
  );
  const sessions = new SessionTable(makeServer);
  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const host = hosts.check(req);
    if ('problem' in host) return plain(res, 421, `This gateway does not answer this request: ${host.problem}.`);
    if (new URL(req.url ?? '/', 'http://gateway.invalid').pathname !== http.path)
      return plain(res, 404, `The MCP endpoint is ${http.path}.`);
    const origin = originProblem(req, http.allowedOrigins);
    if (origin !== undefined) return refuse(res, 403, `Forbidden: ${origin}`);
    const tenant = tenantOf(req, http);
    if (tenant === undefined) {
      res.setHeader('WWW-Authenticate', 'Bearer realm="bullmq-tool-receipts gateway"');
      return refuse(res, 401, 'Unauthorized: send Authorization: Bearer <token> with a token this gateway knows');
    }
    if (!['POST', 'GET', 'DELETE'].includes(req.method ?? '')) {
      res.setHeader('Allow', 'POST, GET, DELETE');
      return refuse(res, 405, 'Method not allowed');
    }
    let body: unknown;
    if (req.method === 'POST') {
      const read = await readBody(req, maxRequestBytes);
      if (read === 'too large') return refuse(res, 413, `Payload too large: a request may hold at most ${maxRequestBytes} bytes`);
      try {
        body = JSON.parse(read);
      } catch {
        return refuse(res, 400, 'Parse error: the body is not JSON', -32700);
      }
    }
    const session = await sessionFor(req, body, tenant, sessions);
    if (session === undefined) return refuse(res, 404, 'Session not found', -32001);
    if (session === 'missing') return refuse(res, 400, 'Bad Request: Mcp-Session-Id header is required');
    session.inFlight++;
    session.lastUsedMs = Date.now();
    try {
      const answer = await session.transport.handleRequest(webRequest(req), body === undefined ? {} : { parsedBody: body });
      await sendAnswer(answer, res);
    } finally {
      session.inFlight--;
      session.lastUsedMs = Date.now();
    }
  };
  const server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      logger.error({ err: error }, 'the gateway could not answer an HTTP request');
      if (!res.headersSent) refuse(res, 500, 'Internal error');
      else res.destroy();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(http.port, http.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const shown = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return {
    url: `http://${shown}:${address.port}${http.path}`,
    server,
    close: async () => {
      await sessions.closeAll();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** The tenant of a request: its bearer token's (every token compared, in constant time), or the one tenant when there are no tokens. */
function tenantOf(req: IncomingMessage, http: HttpFrontConfig): string | undefined {
  if (http.tokens.length === 0) return http.tenant;
  const token = bearerToken(req);
  if (token === undefined) return undefined;
  let found: string | undefined;
  for (const entry of http.tokens) if (sameSecret(token, entry.token) && found === undefined) found = entry.tenant;
  return found;
}

/** The request's session: opened for `initialize`, held, or taken up again; `undefined` when unknown to this tenant, `missing` when none is named. */
async function sessionFor(
  req: IncomingMessage,
  body: unknown,
  tenant: string,
  sessions: SessionTable,
): Promise<LiveSession | 'missing' | undefined> {
  const header = req.headers['mcp-session-id'];
  const id = typeof header === 'string' ? header : undefined;
  if (id === undefined) {
    if (req.method !== 'POST' || !isInitializeRequest(body)) return 'missing';
    const elicits = (body.params.capabilities as { elicitation?: unknown }).elicitation !== undefined;
    return sessions.open(tenant, newSessionId(elicits), false);
  }
  const live = sessions.get(id);
  if (live !== undefined) return live.tenant === tenant ? live : undefined;
  if (readSessionId(id) === undefined) return undefined;
  const resumed = await sessions.open(tenant, id, true);
  return resumed.tenant === tenant ? resumed : undefined;
}

/** The body, or `too large` as soon as it passes `max` bytes (declared or read). */
async function readBody(req: IncomingMessage, max: number): Promise<string | 'too large'> {
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > max) {
    req.resume();
    return 'too large';
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > max) {
      req.resume();
      return 'too large';
    }
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** The request as the SDK's web-standard transport reads it (the body is handed over parsed). */
function webRequest(req: IncomingMessage): Request {
  const headers = new Headers();
  for (const [name, value] of Object.entries(req.headers)) {
    if (value === undefined) continue;
    headers.set(name, Array.isArray(value) ? value.join(', ') : value);
  }
  return new Request(new URL(req.url ?? '/', `http://${req.headers.host ?? 'gateway.invalid'}`), { method: req.method ?? 'GET', headers });
}

/** Writes the transport's answer, streaming an SSE body as it comes; a client that goes away stops the stream. */
async function sendAnswer(answer: Response, res: ServerResponse): Promise<void> {
  res.writeHead(answer.status, Object.fromEntries(answer.headers.entries()));
  if (answer.body === null) {
    res.end();
    return;
  }
  const reader = answer.body.getReader();
  res.on('close', () => void reader.cancel().catch(() => undefined));
  res.flushHeaders();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      res.write(value);
    }
  } catch {
    // the client went away, or the session closed
  }
  res.end();
}

/** A JSON-RPC error answer, as the MCP SDK's transport writes its own refusals. */
function refuse(res: ServerResponse, status: number, message: string, code = -32000): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ jsonrpc: '2.0', error: { code, message }, id: null }));
}

function plain(res: ServerResponse, status: number, text: string): void {
  res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8', 'cache-control': 'no-store' });
  res.end(text);
}
