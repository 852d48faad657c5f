/**
 * The bench's network mode: a TCP proxy on 127.0.0.1 that holds every chunk
 * for half a round trip in each direction, so a round trip through it costs
 * what it costs on a network (`npm run bench -- --rtt 0.5`).
 *
 * It runs in a child process of its own (`startRttProxy`), so its event loop
 * and CPU are not the bench's. Timers in Node fire on whole milliseconds, too
 * coarse for 0.1–0.5 ms; a worker thread sleeps on `Atomics.wait` (which takes
 * fractions of a millisecond) until just before the earliest chunk is due,
 * spins the last few tens of µs, and wakes the proxy's loop; nothing spins
 * longer than that while chunks wait.
 *
 * Every chunk of every connection waits the same time, so one queue in
 * arrival order is also the order of delivery, per connection and in each
 * direction. Bounded: at most MAX_CONNECTIONS connections; a side with more
 * than MAX_PENDING_BYTES waiting is paused until it drains. It stops by
 * itself when its parent goes (stdin closes) or on SIGTERM.
 */
import { spawn } from 'node:child_process';
import { createServer, connect, type Socket } from 'node:net';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { Redis } from 'ioredis';
import { median } from './support.js';

const MAX_CONNECTIONS = 2_000;
const MAX_PENDING_BYTES = 8 * 1024 * 1024;

/** A running proxy: connect to `url` instead of the target. */
export interface RttProxy {
  readonly port: number;
  /** The target's URL with the proxy's host and port (credentials kept). */
  url(targetUrl: string): string;
  /** Sets the delay added per round trip (both halves), from now on. */
  setDelay(rttMs: number): void;
  stop(): Promise<void>;
}

/** This process's flags when it runs TypeScript through tsx (the bench), else tsx's loader (a test runner's child). */
const loaderArgs = (): string[] => (process.execArgv.some((arg) => arg.includes('tsx')) ? process.execArgv : ['--import', 'tsx']);

/** Spawns the proxy in front of `target` (host:port), adding `rttMs` per round trip. */
export async function startRttProxy(target: { host: string; port: number }, rttMs: number): Promise<RttProxy> {
  const child = spawn(
    process.execPath,
    [...loaderArgs(), fileURLToPath(import.meta.url), '--serve', `${target.host}:${target.port}`, String(rttMs)],
    { stdio: ['pipe', 'pipe', 'inherit'] },
  );
  const port = await new Promise<number>((resolve, reject) => {
    let out = '';
    child.once('error', reject);
    child.once('exit', (code) => reject(new Error(`rtt proxy exited early (${code})`)));
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const match = /listening (\d+)/.exec(out);
      if (match) resolve(Number(match[1]));
    });
  });
  child.removeAllListeners('exit');
  return {
    port,
    url(targetUrl: string) {
      const url = new URL(targetUrl);
      url.hostname = '127.0.0.1';
      url.port = String(port);
      return url.toString();
    },
    setDelay(rttMs: number) {
      child.stdin.write(`delay ${rttMs}\n`);
    },
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.stdin.end();
        child.kill('SIGTERM');
      }),
  };
}

/** Median PING round trip over `url`, ms. */
async function pingMs(url: string, pings = 400): Promise<number> {
  const redis = new Redis(url);
  try {
    await redis.ping();
    const times: number[] = [];
    for (let i = 0; i < pings; i++) {
      const started = performance.now();
      await redis.ping();
      times.push(performance.now() - started);
    }
    return median(times);
  } finally {
    redis.disconnect();
  }
}

/**
 * Tunes the proxy's delay so a PING through it takes `rttMs` more than one
 * straight to the server (the proxy's own hops and wake-ups cost something
 * too, more on a loaded machine), and measures what it then adds.
 */
export async function calibrateRttProxy(
  proxy: RttProxy,
  targetUrl: string,
  rttMs: number,
): Promise<{ readonly directMs: number; readonly addedMs: number; readonly delayMs: number }> {
  const directMs = await pingMs(targetUrl);
  let delayMs = rttMs;
  let addedMs = 0;
  // A few steps: the proxy's own cost is not constant in the delay (a timed wait has slack).
  for (let step = 0; step < 4; step++) {
    proxy.setDelay(delayMs);
    addedMs = (await pingMs(proxy.url(targetUrl))) - directMs;
    if (Math.abs(addedMs - rttMs) <= rttMs * 0.05) break;
    delayMs = Math.max(0, delayMs + (rttMs - addedMs) * 0.8);
  }
  return { directMs, addedMs, delayMs };
}

/** One chunk on its way: `socket.write(chunk)` (or `end()` for null) once `at` (ms, hrtime) has come. */
interface Pending {
  readonly at: number;
  readonly to: Socket;
  readonly from: Socket;
  readonly chunk: Buffer | null;
}

const nowMs = () => Number(process.hrtime.bigint()) / 1e6;

/** The worker's loop: sleep until the armed deadline, say so, wait to be re-armed. */
const TIMER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const control = new Int32Array(workerData.control);
const deadline = new Float64Array(workerData.deadline);
const nowMs = () => Number(process.hrtime.bigint()) / 1e6;
for (;;) {
  const seq = Atomics.load(control, 0);
  const at = deadline[0];
  if (!(at < Infinity)) { Atomics.wait(control, 0, seq); continue; }
  const wait = at - nowMs();
  // A timed wait wakes up to ~50 µs late (the kernel's timer slack): sleep to just short of the
  // deadline, then spin the last stretch, so the wake-up is as late under load as when idle.
  if (wait > 0.1) { Atomics.wait(control, 0, seq, wait - 0.07); continue; }
  while (nowMs() < at) {}
  parentPort.postMessage(0);
  Atomics.wait(control, 0, seq);
}
`;

function serve(targetHost: string, targetPort: number, rttMs: number): void {
  let half = rttMs / 2;
  const queue: Pending[] = [];
  let head = 0;
  const control = new Int32Array(new SharedArrayBuffer(4));
  const deadline = new Float64Array(new SharedArrayBuffer(8));
  deadline[0] = Infinity;
  const timer = new Worker(TIMER_SOURCE, { eval: true, workerData: { control: control.buffer, deadline: deadline.buffer } });
  timer.unref();
  const pendingBytes = new Map<Socket, number>();

  const arm = (at: number) => {
    deadline[0] = at;
    Atomics.add(control, 0, 1);
    Atomics.notify(control, 0);
  };
  const flush = () => {
    const now = nowMs();
    while (head < queue.length && queue[head]!.at <= now) {
      const { to, from, chunk } = queue[head++]!;
      if (chunk === null) {
        to.end();
        continue;
      }
      const left = (pendingBytes.get(from) ?? 0) - chunk.length;
      pendingBytes.set(from, left);
      if (left <= MAX_PENDING_BYTES && from.isPaused()) from.resume();
      if (!to.destroyed) to.write(chunk);
    }
    if (head > 1024 && head * 2 > queue.length) {
      queue.splice(0, head);
      head = 0;
    }
    arm(head < queue.length ? queue[head]!.at : Infinity);
  };
  timer.on('message', flush);

  const pipe = (from: Socket, to: Socket) => {
    from.on('data', (chunk: Buffer) => {
      const idle = head === queue.length;
      queue.push({ at: nowMs() + half, to, from, chunk });
      const bytes = (pendingBytes.get(from) ?? 0) + chunk.length;
      pendingBytes.set(from, bytes);
      if (bytes > MAX_PENDING_BYTES) from.pause();
      if (idle) arm(queue[head]!.at);
    });
    from.on('end', () => {
      const idle = head === queue.length;
      queue.push({ at: nowMs() + half, to, from, chunk: null });
      if (idle) arm(queue[head]!.at);
    });
    from.on('close', () => pendingBytes.delete(from));
  };

  const server = createServer({ noDelay: true }, (client) => {
    const upstream = connect({ host: targetHost, port: targetPort, noDelay: true });
    const both = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on('error', both);
    upstream.on('error', both);
    pipe(client, upstream);
    pipe(upstream, client);
  });
  server.maxConnections = MAX_CONNECTIONS;
  server.listen(0, '127.0.0.1', () => {
    const address = server.address();
    process.stdout.write(`listening ${typeof address === 'object' && address ? address.port : 0}\n`);
  });
  const stop = () => process.exit(0);
  let input = '';
  process.stdin.on('data', (chunk: Buffer) => {
    input += chunk.toString();
    for (let nl = input.indexOf('\n'); nl >= 0; nl = input.indexOf('\n')) {
      const match = /^delay ([\d.]+)$/.exec(input.slice(0, nl));
      if (match) half = Number(match[1]) / 2;
      input = input.slice(nl + 1);
    }
  });
  process.stdin.on('end', stop);
  process.stdin.on('close', stop);
  process.on('SIGTERM', stop);
}

if (process.argv[2] === '--serve') {
  const [host, port] = (process.argv[3] ?? '').split(':');
  serve(host ?? '127.0.0.1', Number(port), Number(process.argv[4]));
}
