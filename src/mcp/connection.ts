import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { McpConnectError } from './errors.js';

/** Something that hands out a connected MCP client: a {@link McpConnection}, or your own. */
export interface McpClientSource {
  /** A connected client; connects (again) when there is none. */
  client(): Promise<Client>;
}

/**
 * One MCP client per server per worker process, reconnecting. `connect`
 * builds a client and connects it (stdio: spawns the server; Streamable
 * HTTP: opens the session); the connection calls it on first use and again
 * on the first use after the client closed (the server process exited, the
 * session was dropped). Calls made meanwhile share one connect. Create one
 * per server at the top of the worker module, and `close()` it on shutdown.
 *
 * A call that finds no client and cannot connect never reached the server:
 * `mcpTools` fails it with `NeverStartedError`, so the job retries it.
 */
export class McpConnection implements McpClientSource {
  #current: Promise<Client> | undefined;
  #closed = false;

  constructor(private readonly connect: () => Promise<Client>) {
    if (typeof connect !== 'function') throw new McpConnectError('McpConnection needs a function that returns a connected MCP client');
  }

  client(): Promise<Client> {
    if (this.#closed) return Promise.reject(new McpConnectError('this MCP connection was closed'));
    return (this.#current ??= this.#open());
  }

  async #open(): Promise<Client> {
    let client: Client;
    try {
      client = await this.connect();
    } catch (cause) {
      this.#current = undefined;
      throw new McpConnectError(`could not connect to the MCP server: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
    }
    if (typeof client !== 'object' || client === null || client.transport === undefined) {
      this.#current = undefined;
      throw new McpConnectError('the connect function must return a client it has connected (await client.connect(transport))');
    }
    const mine = this.#current;
    const previous = client.onclose;
    client.onclose = () => {
      previous?.();
      // The next use connects again; a call in flight on this client has already been told (ConnectionClosed).
      if (this.#current === mine) this.#current = undefined;
    };
    if (this.#closed) {
      await client.close().catch(() => undefined);
      throw new McpConnectError('this MCP connection was closed while it connected');
    }
    return client;
  }

  /** Close the client, if any; later uses fail with `mcp.connect`. */
  async close(): Promise<void> {
    this.#closed = true;
    const current = this.#current;
    this.#current = undefined;
    const client = await current?.catch(() => undefined);
    await client?.close();
  }
}
