/** The console served on its own HTTP server, as `tool-receipts console` runs it. */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ConsoleOptionsError, ConsoleTokenRequiredError } from './errors.js';
import { createConsoleHandler, type ConsoleOptions } from './handler.js';
import { boundHosts, isLoopbackHost } from '../http/hosts.js';
import { hasTokens } from './security.js';

/** Where to listen, and the console's options. */
export interface ConsoleServerOptions extends ConsoleOptions {
  /**
   * Interface to bind; default `127.0.0.1`. Anything but loopback needs a
   * token, and the console then also answers for that address (or name);
   * bound to `0.0.0.0` or `::`, for every address of this machine's
   * interfaces. Any other name users reach it by goes in `allowedHosts`.
   */
  readonly host?: string;
  /** Port; default 8787 (0 picks a free one). */
  readonly port?: number;
}

/** A running console server. */
export interface ConsoleServer {
  /** The URL it answers on (on loopback when it is bound to every interface). */
  readonly url: string;
  readonly server: Server;
  /** The hosts it answers for besides loopback: `allowedHosts` and those its binding adds. */
  readonly allowedHosts: readonly string[];
  /** Stops accepting requests and closes open connections. */
  close(): Promise<void>;
}

/** The default port of `tool-receipts console`. */
export const DEFAULT_CONSOLE_PORT = 8787;

/**
 * Serves the console. Binds 127.0.0.1 unless told otherwise; binding any other
 * interface without a token throws {@link ConsoleTokenRequiredError} before
 * anything listens.
 */
export async function startConsoleServer(options: ConsoleServerOptions): Promise<ConsoleServer> {
  const host = options.host ?? '127.0.0.1';
  if (!isLoopbackHost(host) && !hasTokens(options.tokens ?? {})) {
    throw new ConsoleTokenRequiredError(host);
  }
  if (options.allowedHosts !== undefined && !Array.isArray(options.allowedHosts))
    throw new ConsoleOptionsError('allowedHosts must be a list of host names');
  const allowedHosts = [...new Set([...(options.allowedHosts ?? []), ...boundHosts(host)])];
  const handler = createConsoleHandler({ ...options, allowedHosts });
  const server = createServer(handler);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? DEFAULT_CONSOLE_PORT, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  // Bound to every interface, it is reached on loopback as on any other: the URL names loopback, an address a browser can use.
  const reachable = address.address === '0.0.0.0' ? '127.0.0.1' : address.address === '::' ? '::1' : address.address;
  const shown = address.family === 'IPv6' ? `[${reachable}]` : reachable;
  return {
    url: `http://${shown}:${address.port}/`,
    server,
    allowedHosts,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
