/**
 * The default backend of the Redis test harness: a `redis-server` child
 * process owned by the test, on a free loopback port, in its own temp dir.
 * Use it through `startRedis()` in `./redis.ts`.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { onProcessEnd } from './cleanup.js';
import { LOOPBACK, freePort, waitForPing } from './ports.js';
import type { RedisHandle, StartRedisOptions } from './redis.js';

const LOG_LINES = 40;
const READY_DEADLINE_MS = 10_000;
const SHUTDOWN_DEADLINE_MS = 10_000;
const START_ATTEMPTS = 5;

/** Full path of an executable called `name` on PATH, or undefined. */
export function findOnPath(name: string): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
    if (!dir) continue;
    const candidate = path.join(dir, name);
    try {
      fs.accessSync(candidate, fs.constants.X_OK);
      if (fs.statSync(candidate).isFile()) return candidate;
    } catch {
      // not here; keep looking
    }
  }
  return undefined;
}

let pdeathsig: string | undefined | null = null;

/**
 * `setpriv` from util-linux, when it can set a parent-death signal: the
 * server is then SIGKILLed by the kernel even if the test process itself is
 * SIGKILLed and no cleanup hook gets to run.
 */
function setprivPath(): string | undefined {
  if (pdeathsig === null) {
    const found = findOnPath('setpriv');
    const works = found && spawnSync(found, ['--pdeathsig', 'SIGKILL', 'true'], { stdio: 'ignore' }).status === 0;
    pdeathsig = works ? found : undefined;
  }
  return pdeathsig;
}

function sentinelArgs(port: number, dir: string, config: string): string[] {
  // Sentinel rewrites its config file, so it lives in the server's own temp dir.
  const file = path.join(dir, 'sentinel.conf');
  fs.writeFileSync(file, `port ${port}\nbind ${LOOPBACK}\ndir ${dir}\ndaemonize no\n${config}\n`);
  return [file, '--sentinel'];
}

function serverArgs(port: number, dir: string, options: StartRedisOptions, busPort: number | undefined): string[] {
  if (options.sentinelConfig !== undefined) return sentinelArgs(port, dir, options.sentinelConfig);
  const appendonly = options.appendonly ?? false;
  const args = [
    '--bind',
    LOOPBACK,
    '--port',
    String(port),
    '--save',
    '',
    '--appendonly',
    appendonly ? 'yes' : 'no',
    '--dir',
    dir,
    '--maxmemory-policy',
    'noeviction',
    '--daemonize',
    'no',
  ];
  if (appendonly) args.push('--appendfsync', options.appendfsync ?? 'always');
  if (busPort !== undefined) {
    // The bus port is set explicitly: the default, port + 10000, may be taken or above 65535.
    args.push('--cluster-enabled', 'yes', '--cluster-config-file', path.join(dir, 'nodes.conf'), '--cluster-port', String(busPort));
  }
  return [...args, ...(options.extraArgs ?? [])];
}

function unrefStream(stream: Readable | null): void {
  (stream as unknown as { unref?: () => void } | null)?.unref?.();
}

/** A `redis-server` process started and owned by this test process. */
export class LocalRedis implements RedisHandle {
  readonly host = LOOPBACK;
  readonly controllable = true;
  readonly uncontrollableReason = undefined;
  private child: ChildProcess | undefined;
  private exited: Promise<void> = Promise.resolve();
  private exitInfo: string | undefined;
  private logLines: string[] = [];
  private paused = false;
  private stopped = false;
  private unregister: () => void = () => undefined;

  private constructor(
    private readonly binary: string,
    readonly port: number,
    /** The server's own temp dir (its AOF lives under it). */
    readonly dir: string,
    private readonly args: string[],
    readonly prefix: string,
  ) {}

  get url(): string {
    return `redis://${this.host}:${this.port}`;
  }

  /** Starts a server, retrying on a new port when the chosen one was taken meanwhile. */
  static async start(binary: string, options: StartRedisOptions, prefix: string): Promise<LocalRedis> {
    let lastError: unknown;
    for (let attempt = 0; attempt < START_ATTEMPTS; attempt++) {
      const port = await freePort();
      const busPort = options.cluster ? await freePort() : undefined;
      const dir = await fs.promises.mkdtemp(path.join(os.tmpdir(), 'tool-receipts-redis-'));
      const server = new LocalRedis(binary, port, dir, serverArgs(port, dir, options, busPort), prefix);
      server.unregister = onProcessEnd(() => server.killSync());
      try {
        await server.launch();
        return server;
      } catch (err) {
        lastError = err;
        const busy = server.portWasBusy();
        await server.stop();
        if (!busy) throw err;
      }
    }
    throw lastError;
  }

  private isAlive(): boolean {
    return this.child !== undefined && this.child.exitCode === null && this.child.signalCode === null;
  }

  private portWasBusy(): boolean {
    return this.logLines.some((line) => /address already in use/i.test(line));
  }

  private record(chunk: Buffer, partial: { text: string }): void {
    const lines = (partial.text + chunk.toString('utf8')).split('\n');
    partial.text = lines.pop() ?? '';
    this.logLines.push(...lines.filter((l) => l.trim() !== ''));
    if (this.logLines.length > LOG_LINES) this.logLines.splice(0, this.logLines.length - LOG_LINES);
  }

  private logTail(): string {
    return this.logLines.length ? this.logLines.join('\n') : '(no output)';
  }

  private async launch(): Promise<void> {
    this.logLines = [];
    this.exitInfo = undefined;
    this.paused = false;
    const setpriv = setprivPath();
    const child = setpriv
      ? spawn(setpriv, ['--pdeathsig', 'SIGKILL', this.binary, ...this.args], { stdio: ['ignore', 'pipe', 'pipe'] })
      : spawn(this.binary, this.args, { stdio: ['ignore', 'pipe', 'pipe'] });
    this.child = child;
    this.exited = new Promise((resolve) => {
      child.once('exit', (code, signal) => {
        this.exitInfo = `exited early (code ${code}, signal ${signal})`;
        resolve();
      });
      child.once('error', (err) => {
        this.exitInfo = `could not be spawned: ${err.message}`;
        resolve();
      });
    });
    const out = { text: '' };
    const err = { text: '' };
    child.stdout?.on('data', (c: Buffer) => this.record(c, out));
    child.stderr?.on('data', (c: Buffer) => this.record(c, err));
    // Never let a forgotten server keep the test process alive; onProcessEnd kills it.
    child.unref();
    unrefStream(child.stdout);
    unrefStream(child.stderr);
    try {
      await waitForPing(this.host, this.port, READY_DEADLINE_MS, () =>
        this.exitInfo === undefined ? undefined : `redis-server on port ${this.port} ${this.exitInfo}`,
      );
    } catch (e) {
      await this.kill().catch(() => undefined);
      await new Promise((r) => setImmediate(r)); // let the last log chunks arrive
      throw new Error(
        `${(e as Error).message}\n` +
          `command: ${this.binary} ${this.args.map((a) => (a === '' ? '""' : a)).join(' ')}\n` +
          `--- last lines of the redis-server log ---\n${this.logTail()}`,
      );
    }
  }

  private assertUsable(what: string): void {
    if (this.stopped) throw new Error(`cannot ${what}: this Redis handle was already stopped`);
  }

  private assertAlive(what: string): void {
    this.assertUsable(what);
    if (!this.isAlive()) throw new Error(`cannot ${what}: redis-server on port ${this.port} is not running`);
  }

  /** Waits for the process to exit, holding the event loop open meanwhile (the child is unref'd). */
  private async waitExit(): Promise<void> {
    this.child?.ref();
    await this.exited;
  }

  async kill(): Promise<void> {
    this.assertUsable('kill');
    if (this.isAlive()) this.child?.kill('SIGKILL');
    await this.waitExit();
    this.paused = false;
  }

  /** SIGTERM (after SIGCONT when paused), then SIGKILL if it has not exited in time. */
  private async shutdown(): Promise<void> {
    if (!this.isAlive()) return this.waitExit();
    if (this.paused) this.child?.kill('SIGCONT');
    this.child?.kill('SIGTERM');
    let timer: NodeJS.Timeout | undefined;
    const timedOut = await Promise.race([
      this.waitExit().then(() => false),
      new Promise<boolean>((r) => (timer = setTimeout(() => r(true), SHUTDOWN_DEADLINE_MS))),
    ]);
    clearTimeout(timer);
    if (timedOut && this.isAlive()) this.child?.kill('SIGKILL');
    await this.waitExit();
    this.paused = false;
  }

  async restart(): Promise<void> {
    this.assertUsable('restart');
    await this.shutdown();
    for (let attempt = 1; ; attempt++) {
      try {
        await this.launch();
        return;
      } catch (err) {
        if (!this.portWasBusy() || attempt >= START_ATTEMPTS) throw err;
        await new Promise((r) => setTimeout(r, 200));
      }
    }
  }

  async pause(): Promise<void> {
    this.assertAlive('pause');
    this.child?.kill('SIGSTOP');
    this.paused = true;
  }

  async resume(): Promise<void> {
    this.assertAlive('resume');
    this.child?.kill('SIGCONT');
    this.paused = false;
  }

  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    try {
      await this.shutdown();
    } finally {
      this.unregister();
      await fs.promises.rm(this.dir, { recursive: true, force: true });
    }
  }

  /** Synchronous last-resort cleanup for when the test process ends. */
  killSync(): void {
    if (this.isAlive()) this.child?.kill('SIGKILL');
    try {
      fs.rmSync(this.dir, { recursive: true, force: true });
    } catch {
      // best effort while exiting
    }
  }
}
