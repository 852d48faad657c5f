/**
 * A connection to an MCP server that reconnects with backoff, for the tools
 * `mcpTools` makes from it.
 */
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { McpConnectError, InvalidMcpToolsOptionsError } from './errors.js';
import { httpStatusOf, SESSION_NOT_FOUND } from './failure.js';
import {
  checkMcpOptions,
  DEFAULT_MCP_MAX_RECONNECT_DELAY_MS,
  DEFAULT_MCP_RECONNECT_DELAY_MS,
  MCP_CONNECTION_OPTIONS_SCHEMA,
  type McpConnectionOptions,
} from './options.js';

/** Something that hands out a connected MCP client: a {@link McpConnection}, or your own. */
export interface McpClientSource {
  /** A connected client; connects (again) when there is none. */
  client(): Promise<Client>;
}

/**
 * One MCP client per server per worker process, reconnecting. `connect`
 * builds a client and connects it (stdio: spawns the server; Streamable
 * HTTP: opens the session); the connection calls it on first use and again
 * on the first use after the client is gone:
 * - the client closed (a stdio server's process exited, or the transport
 *   was closed);
 * - a Streamable HTTP endpoint answered 404 to a request carrying the
 *   client's `Mcp-Session-Id` (the server restarted, or dropped the
 *   session): as the MCP spec says, a new session is started. The old
 *   client is closed once every request it posted has had its HTTP answer
 *   (one still being posted meets its own 404 and is sent again), so a call
 *   still waiting on the old session's stream fails as an unknown outcome
 *   (it may have reached the old session) instead of waiting for its
 *   timeout.
 *
 * Calls made meanwhile share one connect. A connect that fails is tried
 * again on a later use, no sooner than the backoff allows (see
 * {@link McpConnectionOptions}). Create one per server at the top of the
 * worker module, and `close()` it on shutdown.
 *
 * A call that finds no client and cannot connect never reached the server:
 * `mcpTools` fails it with `NeverStartedError` (`unreachable`: not counted
 * by the run's breaker), so the job retries it.
 */
export class McpConnection implements McpClientSource {
  #current: Promise<Client> | undefined;
  /** The client `#current` resolved to, while it is the one handed out. */
  #client: Client | undefined;
  #closed = false;
  /** Clients whose session was lost, waiting for their requests' HTTP answers before they are closed. */
  readonly #retiring = new Set<Client>();
  /** Connects that failed in a row, and when the next may start (performance.now()). */
  #failures = 0;
  #nextConnectAt = 0;
  #lastFailure: unknown;
  readonly #delayMs: number;
  readonly #maxDelayMs: number;

  constructor(
    private readonly connect: () => Promise<Client>,
    options: McpConnectionOptions = {},
  ) {
    if (typeof connect !== 'function') throw new McpConnectError('McpConnection needs a function that returns a connected MCP client');
    checkMcpOptions('McpConnection', options, MCP_CONNECTION_OPTIONS_SCHEMA);
    this.#delayMs = options.reconnectDelayMs ?? DEFAULT_MCP_RECONNECT_DELAY_MS;
    this.#maxDelayMs = options.maxReconnectDelayMs ?? Math.max(DEFAULT_MCP_MAX_RECONNECT_DELAY_MS, this.#delayMs);
    if (this.#maxDelayMs < this.#delayMs) {
      throw new InvalidMcpToolsOptionsError(
        `McpConnection: maxReconnectDelayMs (${this.#maxDelayMs}) must not be less than reconnectDelayMs (${this.#delayMs})`,
      );
    }
  }

  client(): Promise<Client> {
    if (this.#closed) return Promise.reject(new McpConnectError('this MCP connection was closed'));
    if (this.#current) return this.#current;
    const wait = Math.ceil(this.#nextConnectAt - performance.now());
    if (this.#failures > 0 && wait > 0) {
      const last = this.#lastFailure instanceof Error ? this.#lastFailure.message : String(this.#lastFailure);
      return Promise.reject(
        new McpConnectError(
          `the MCP server could not be reached (${this.#failures} connect(s) failed in a row, the last: ${last}); the next try is in ${wait} ms`,
          {
            cause: this.#lastFailure,
          },
        ),
      );
    }
    return (this.#current = this.#open());
  }

  async #open(): Promise<Client> {
    let client: Client;
    try {
      client = await this.connect();
      if (typeof client !== 'object' || client === null || client.transport === undefined) {
        throw new McpConnectError('the connect function must return a client it has connected (await client.connect(transport))');
      }
    } catch (cause) {
      this.#current = undefined;
      this.#failures++;
      this.#lastFailure = cause;
      this.#nextConnectAt = performance.now() + Math.min(this.#maxDelayMs, this.#delayMs * 2 ** Math.min(this.#failures - 1, 30));
      if (cause instanceof McpConnectError) throw cause;
      throw new McpConnectError(`could not connect to the MCP server: ${cause instanceof Error ? cause.message : String(cause)}`, {
        cause,
      });
    }
    this.#failures = 0;
    const mine = this.#current;
    // Dropped, the next use connects again. A call in flight on a closed client has already been told (ConnectionClosed).
    const drop = () => {
      if (this.#current !== mine) return;
      this.#current = undefined;
      this.#client = undefined;
    };
    const previousClose = client.onclose;
    client.onclose = () => {
      previousClose?.();
      drop();
    };
    const posts = new PostsInFlight(client);
    const previousError = client.onerror;
    client.onerror = (error) => {
      previousError?.(error);
      if (this.#current !== mine || !sessionLost(client, error)) return;
      drop();
      this.#retiring.add(client);
      // Closed once every request it sent has had its HTTP answer: one still being posted (to a server
      // restarted meanwhile, say) gets its own 404 and is sent again; only requests that were answered and
      // still wait on the old session's stream end as unknown outcomes. The close comes on a later turn of
      // the event loop, so the request that met the 404 is told of it first.
      posts.whenIdle(() =>
        setImmediate(() => {
          this.#retiring.delete(client);
          void client.close().catch(() => undefined);
        }),
      );
    };
    if (this.#closed) {
      await client.close().catch(() => undefined);
      throw new McpConnectError('this MCP connection was closed while it connected');
    }
    this.#client = client;
    return client;
  }

  /**
   * Close the client, if any; later uses fail with `mcp.connect`. A connect
   * still under way is not waited for: its client is closed when it comes.
   */
  async close(): Promise<void> {
    this.#closed = true;
    const client = this.#client;
    this.#current = undefined;
    this.#client = undefined;
    const retiring = [...this.#retiring];
    this.#retiring.clear();
    await Promise.all(retiring.map((old) => old.close().catch(() => undefined)));
    await client?.close();
  }
}

/**
 * Counts the messages a client's transport is still sending (for Streamable
 * HTTP, a POST whose response has not yet been read), so that a client whose
 * session was lost is closed only when none is: closing aborts every request
 * still waiting, and one whose POST is still out will be answered on its own.
 */
class PostsInFlight {
  #sending = 0;
  #onIdle: (() => void) | undefined;

  constructor(client: Client) {
    const transport = client.transport!;
    const send = transport.send.bind(transport);
    const settled = () => {
      if (--this.#sending > 0 || this.#onIdle === undefined) return;
      const onIdle = this.#onIdle;
      this.#onIdle = undefined;
      onIdle();
    };
    transport.send = (message, options) => {
      this.#sending++;
      const sent = send(message, options);
      sent.then(settled, settled);
      return sent;
    };
  }

  /** Runs `action` now if nothing is being sent, else when the last send in flight settles. */
  whenIdle(action: () => void): void {
    if (this.#sending === 0) action();
    else this.#onIdle = action;
  }
}

/** A Streamable HTTP endpoint answered 404 to a request carrying this client's session id: the session is gone. */
function sessionLost(client: Client, error: unknown): boolean {
  const sessionId = (client.transport as { sessionId?: unknown } | undefined)?.sessionId;
  return typeof sessionId === 'string' && httpStatusOf(error) === SESSION_NOT_FOUND;
}
