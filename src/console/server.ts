/** The console served on its own HTTP server, as `tool-receipts console` runs it. */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ConsoleTokenRequiredError } from './errors.js';
import { createConsoleHandler, type ConsoleOptions } from './handler.js';

/** Where to listen, and the console's options. */
export interface ConsoleServerOptions extends ConsoleOptions {
  /** Interface to bind; default `127.0.0.1`. Anything but loopback needs a token. */
  readonly host?: string;
  /** Port; default 8787 (0 picks a free one). */
  readonly port?: number;
}

/** A running console server. */
export interface ConsoleServer {
  /** The URL it answers on. */
  readonly url: string;
  readonly server: Server;
  /** Stops accepting requests and closes open connections. */
  close(): Promise<void>;
}

/** The default port of `tool-receipts console`. */
export const DEFAULT_CONSOLE_PORT = 8787;

/** True for an address only this machine can reach. */
export function isLoopbackHost(host: string): boolean {
  return host === 'localhost' || host === '::1' || /^127(\.\d{1,3}){3}$/.test(host);
}

/**
 * Serves the console. Binds 127.0.0.1 unless told otherwise; binding any other
 * interface without a token throws {@link ConsoleTokenRequiredError} before
 * anything listens.
 */
export async function startConsoleServer(options: ConsoleServerOptions): Promise<ConsoleServer> {
  const host = options.host ?? '127.0.0.1';
  if (!isLoopbackHost(host) && options.tokens?.operator === undefined && options.tokens?.read === undefined) {
    throw new ConsoleTokenRequiredError(host);
  }
  const handler = createConsoleHandler(options);
  const server = createServer(handler);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? DEFAULT_CONSOLE_PORT, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const shown = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return {
    url: `http://${shown}:${address.port}/`,
    server,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
