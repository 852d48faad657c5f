/**
 * The HTTP front's sessions. A session id is the run a client's calls are
 * kept under when it names none, so it must outlive the process that issued
 * it: a client whose answer was cut off by a front that died sends its call
 * again, on the same session, to the next front. So the gateway keeps no
 * session state a restart loses: an id it does not hold (issued before a
 * restart, or by another front of the fleet) is taken up again, its server
 * made afresh. The id carries the one thing that server must know, whether
 * the client offered form elicitation.
 *
 * A session belongs to the tenant that opened (or took up) it in this
 * process; another tenant presenting its id is told the session does not
 * exist. Taking up an id gives nothing a client could not have otherwise:
 * its receipts are its tenant's, and a run id in `_meta` names any run.
 */
import { randomBytes } from 'node:crypto';
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import { LATEST_PROTOCOL_VERSION } from '@modelcontextprotocol/sdk/types.js';

const SESSION_ID = /^gw1\.([en])\.[A-Za-z0-9_-]{22}$/;

/** A new session id; `elicits` when the client offered form elicitation at `initialize`. */
export function newSessionId(elicits: boolean): string {
  return `gw1.${elicits ? 'e' : 'n'}.${randomBytes(16).toString('base64url')}`;
}

/** Whether `id` is one the gateway issues, and what it says of the client; `undefined` for anything else. */
export function readSessionId(id: string): { elicits: boolean } | undefined {
  const match = SESSION_ID.exec(id);
  return match ? { elicits: match[1] === 'e' } : undefined;
}

/** One live session: its transport, its server, and whose it is. */
export interface LiveSession {
  readonly id: string;
  readonly tenant: string;
  readonly transport: WebStandardStreamableHTTPServerTransport;
  readonly server: Server;
  lastUsedMs: number;
  /** Requests being handled now; a session is never closed for idleness while it has any. */
  inFlight: number;
}

/** Makes the server of a session for a tenant. */
export type ServerFactory = (tenant: string, sessionId: string) => Server;

/** Sessions held in memory, closed when idle (they are taken up again on their next request). */
export class SessionTable {
  readonly #live = new Map<string, LiveSession>();
  /** Sessions being taken up: two requests on one id at once share one. */
  readonly #opening = new Map<string, Promise<LiveSession>>();
  readonly #sweep: NodeJS.Timeout;

  constructor(
    private readonly makeServer: ServerFactory,
    private readonly idleMs = 15 * 60_000,
    private readonly maxSessions = 10_000,
  ) {
    this.#sweep = setInterval(() => void this.#closeIdle(), Math.min(idleMs, 60_000));
    this.#sweep.unref();
  }

  get(id: string): LiveSession | undefined {
    return this.#live.get(id);
  }

  /**
   * A session for `initialize` (a fresh id) or for an id this process does
   * not hold (`resume`: the server is initialized for it at once, as the
   * client did when the session began).
   */
  open(tenant: string, id: string, resume: boolean): Promise<LiveSession> {
    const opening = this.#opening.get(id);
    if (opening !== undefined) return opening;
    const made = this.#make(tenant, id, resume).finally(() => this.#opening.delete(id));
    this.#opening.set(id, made);
    return made;
  }

  async #make(tenant: string, id: string, resume: boolean): Promise<LiveSession> {
    if (this.#live.size >= this.maxSessions) await this.#closeIdle(true);
    const transport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: () => id,
      onsessionclosed: () => void this.#live.delete(id),
    });
    const server = this.makeServer(tenant, id);
    await server.connect(transport);
    const session: LiveSession = { id, tenant, transport, server, lastUsedMs: Date.now(), inFlight: 0 };
    transport.onclose = () => {
      if (this.#live.get(id) === session) this.#live.delete(id);
    };
    if (resume) await initializeAgain(transport, readSessionId(id)?.elicits === true);
    this.#live.set(id, session);
    return session;
  }

  async #closeIdle(evenRecent = false): Promise<void> {
    const now = Date.now();
    const idle = [...this.#live.values()].filter((s) => s.inFlight === 0 && (evenRecent || now - s.lastUsedMs > this.idleMs));
    idle.sort((a, b) => a.lastUsedMs - b.lastUsedMs);
    for (const session of evenRecent ? idle.slice(0, Math.max(1, Math.ceil(idle.length / 10))) : idle) await close(this.#live, session);
  }

  /** Closes every session (the front is stopping). */
  async closeAll(): Promise<void> {
    clearInterval(this.#sweep);
    for (const session of [...this.#live.values()]) await close(this.#live, session);
  }
}

async function close(live: Map<string, LiveSession>, session: LiveSession): Promise<void> {
  live.delete(session.id);
  await session.transport.close().catch(() => undefined);
  await session.server.close().catch(() => undefined);
}

/** The headers a client sends with a POST, for the requests the front makes itself. */
const POST_HEADERS = { accept: 'application/json, text/event-stream', 'content-type': 'application/json' };

/**
 * Initializes a session's new server as its client did when the session
 * began (`initialize`, then `notifications/initialized`), through the
 * transport's own request handling, so the server takes up requests on the
 * session id at once.
 */
async function initializeAgain(transport: WebStandardStreamableHTTPServerTransport, elicits: boolean): Promise<void> {
  const url = 'http://gateway.invalid/';
  const initialize = {
    jsonrpc: '2.0',
    id: 'gateway-session-resumed',
    method: 'initialize',
    params: {
      protocolVersion: LATEST_PROTOCOL_VERSION,
      capabilities: elicits ? { elicitation: { form: {} } } : {},
      clientInfo: { name: 'resumed session', version: '0' },
    },
  };
  const answer = await transport.handleRequest(new Request(url, { method: 'POST', headers: POST_HEADERS }), { parsedBody: initialize });
  await answer.text();
  if (answer.status !== 200) throw new Error(`the session could not be taken up again (HTTP ${answer.status})`);
  const headers = { ...POST_HEADERS, 'mcp-session-id': transport.sessionId ?? '', 'mcp-protocol-version': LATEST_PROTOCOL_VERSION };
  const initialized = { jsonrpc: '2.0', method: 'notifications/initialized' };
  await (await transport.handleRequest(new Request(url, { method: 'POST', headers }), { parsedBody: initialized })).text();
}
