/**
 * A TCP proxy in front of a real PostgreSQL that reads the client's side of
 * the wire protocol, so a test can cut a connection exactly at COMMIT: after
 * the server has it but before the client hears back (a lost reply), before
 * the server has it, or leave the server's side open and silent (a client
 * gone while its transaction stays open). Everything else passes through.
 */
import net from 'node:net';
import { LOOPBACK } from './ports.js';

/**
 * What to do with the next COMMIT a client sends:
 * - `deliver-then-cut`: the server gets it (and commits); the client never hears back.
 * - `drop-then-cut`: the server never gets it and sees the connection close (it rolls back).
 * - `drop-then-hang`: the server never gets it and its side stays open (the transaction stays open).
 */
export type CommitCut = 'deliver-then-cut' | 'drop-then-cut' | 'drop-then-hang';

export interface PgProxy {
  /** The database URL through the proxy. */
  readonly url: string;
  /** Cuts the next COMMIT as `how`; resolves when it has. With `thenRefuse`, the proxy accepts no connection after it. */
  cutNextCommit(how: CommitCut, options?: { thenRefuse?: boolean }): Promise<void>;
  close(): Promise<void>;
}

const COMMIT = /^\s*commit\s*;?\s*$/i;

/** The SQL of a simple Query ('Q') or Parse ('P') message, if it is one. */
function statementOf(type: string, body: Buffer): string | undefined {
  if (type === 'Q') return body.toString('utf8', 0, body.indexOf(0));
  if (type === 'P') {
    const nameEnd = body.indexOf(0);
    return body.toString('utf8', nameEnd + 1, body.indexOf(0, nameEnd + 1));
  }
  return undefined;
}

export async function startPgProxy(upstreamUrl: string): Promise<PgProxy> {
  const upstream = new URL(upstreamUrl);
  let armed: { how: CommitCut; done: () => void; thenRefuse: boolean } | undefined;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const backend = net.connect(Number(upstream.port), upstream.hostname);
    sockets.add(client).add(backend);
    client.on('close', () => sockets.delete(client));
    backend.on('close', () => sockets.delete(backend));
    client.on('error', () => backend.destroy());
    backend.on('error', () => client.destroy());
    backend.on('data', (chunk) => client.write(chunk));
    backend.on('end', () => client.end());
    client.on('end', () => backend.end());
    let pending = Buffer.alloc(0);
    let started = false;
    /** Messages held back while a COMMIT sent with the extended protocol is being cut (up to its Sync). */
    let cutting: { how: CommitCut; done: () => void; thenRefuse: boolean; held: Buffer[] } | undefined;
    client.on('data', (chunk) => {
      pending = Buffer.concat([pending, chunk]);
      for (;;) {
        if (!started) {
          // The startup message has no type byte: length, then the protocol version.
          if (pending.length < 4) return;
          const length = pending.readInt32BE(0);
          if (pending.length < length) return;
          backend.write(pending.subarray(0, length));
          pending = pending.subarray(length);
          started = true;
          continue;
        }
        if (pending.length < 5) return;
        const length = pending.readInt32BE(1) + 1;
        if (pending.length < length) return;
        const message = pending.subarray(0, length);
        pending = pending.subarray(length);
        const type = String.fromCharCode(message[0]!);
        const sql = statementOf(type, message.subarray(5));
        if (cutting === undefined && armed !== undefined && sql !== undefined && COMMIT.test(sql)) {
          cutting = { ...armed, held: [] };
          armed = undefined;
        }
        if (cutting === undefined) {
          backend.write(message);
          continue;
        }
        cutting.held.push(message);
        // A simple query is one message; an extended one ends at its Sync.
        if (type !== 'Q' && type !== 'S') continue;
        const { how, done, held, thenRefuse } = cutting;
        if (thenRefuse) server.close();
        client.removeAllListeners('data');
        backend.removeAllListeners('data');
        if (how === 'deliver-then-cut') backend.end(Buffer.concat(held));
        else if (how === 'drop-then-cut') backend.destroy();
        else backend.pause(); // keep the backend's side open, and read nothing from it
        client.destroy();
        done();
        return;
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, LOOPBACK, resolve));
  const port = (server.address() as net.AddressInfo).port;
  const url = new URL(upstreamUrl);
  url.hostname = LOOPBACK;
  url.port = String(port);
  return {
    url: url.toString(),
    cutNextCommit: (how, options = {}) => new Promise<void>((done) => (armed = { how, done, thenRefuse: options.thenRefuse === true })),
    async close() {
      for (const socket of sockets) socket.destroy();
      if (server.listening) await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
