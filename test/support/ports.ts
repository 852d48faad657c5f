/**
 * Small network helpers for the Redis test harness: picking a free loopback
 * port and checking whether something answers Redis PING on it.
 */
import net from 'node:net';

/** The loopback address every harness-started server binds to. */
export const LOOPBACK = '127.0.0.1';

function bindOnce(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.unref();
    server.once('error', reject);
    server.listen({ host: LOOPBACK, port: 0, exclusive: true }, () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close((err) => (err ? reject(err) : resolve(port)));
    });
  });
}

/**
 * Asks the kernel for an unused TCP port on 127.0.0.1 by listening on port 0
 * and closing again. Another process may grab the port before the caller uses
 * it, so callers should retry their own start-up when the port turns out busy.
 * EADDRINUSE while probing is retried a few times here.
 */
export async function freePort(attempts = 5): Promise<number> {
  let lastError: unknown;
  for (let i = 0; i < attempts; i++) {
    try {
      const port = await bindOnce();
      if (port > 0) return port;
    } catch (err) {
      lastError = err;
      if ((err as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw err;
    }
  }
  throw new Error(`could not find a free port on ${LOOPBACK}: ${String(lastError)}`);
}

/**
 * Sends one inline `PING` over a raw socket and resolves true only on `+PONG`.
 * Any other reply (for example `-LOADING` while an AOF is replayed), a refused
 * connection or no answer within `timeoutMs` resolves false; it never rejects.
 */
export function pingOnce(host: string, port: number, timeoutMs = 500): Promise<boolean> {
  return new Promise((resolve) => {
    let reply = '';
    let settled = false;
    const socket = net.connect({ host, port });
    const finish = (ok: boolean): void => {
      if (settled) return;
      settled = true;
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(timeoutMs, () => finish(false));
    socket.once('error', () => finish(false));
    socket.once('close', () => finish(false));
    socket.once('connect', () => socket.write('PING\r\n'));
    socket.on('data', (chunk: Buffer) => {
      reply += chunk.toString('utf8');
      if (reply.includes('\r\n')) finish(reply.startsWith('+PONG'));
    });
  });
}

/**
 * Polls {@link pingOnce} until it succeeds or `deadlineMs` passes.
 * `abort` is checked between attempts; when it returns a string (for example
 * "the process exited"), waiting stops at once and that text is thrown.
 */
export async function waitForPing(
  host: string,
  port: number,
  deadlineMs = 10_000,
  abort: () => string | undefined = () => undefined,
): Promise<void> {
  const deadline = Date.now() + deadlineMs;
  let delay = 20;
  for (;;) {
    const reason = abort();
    if (reason !== undefined) throw new Error(reason);
    if (await pingOnce(host, port)) return;
    if (Date.now() >= deadline) {
      throw new Error(`redis on ${host}:${port} did not answer PING within ${deadlineMs} ms`);
    }
    await new Promise((r) => setTimeout(r, delay));
    delay = Math.min(delay * 2, 200);
  }
}
