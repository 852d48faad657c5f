/**
 * Fallback backend of the Redis test harness for machines without a
 * `redis-server` binary but with a usable Docker daemon: a `redis:7`
 * container started through testcontainers. Use it through `startRedis()`.
 *
 * Fault operations map to Docker: kill is `docker kill` (SIGKILL), pause and
 * resume are `docker pause` / `docker unpause` (the cgroup freezer, which like
 * SIGSTOP leaves connections open but unanswered), and restart is
 * `docker restart` on the same container, so the fixed host port and the
 * container's /data (and with it the AOF) are kept.
 */
import { execFile, spawnSync } from 'node:child_process';
import { promisify } from 'node:util';
import { onProcessEnd } from './cleanup.js';
import { LOOPBACK, freePort, waitForPing } from './ports.js';
import type { RedisHandle, StartRedisOptions } from './redis.js';

const run = promisify(execFile);
const IMAGE = 'redis:7';
const READY_DEADLINE_MS = 10_000;

let dockerChecked: boolean | undefined;

/** True when `docker info` succeeds (checked once per process). */
export function dockerUsable(): boolean {
  if (dockerChecked === undefined) {
    const result = spawnSync('docker', ['info'], { stdio: 'ignore', timeout: 15_000 });
    dockerChecked = result.status === 0;
  }
  return dockerChecked;
}

async function docker(...args: string[]): Promise<void> {
  await run('docker', args, { timeout: 60_000 });
}

type Started = import('testcontainers').StartedTestContainer;

/** A `redis:7` container started and owned by this test process. */
export class DockerRedis implements RedisHandle {
  readonly controllable = true;
  readonly uncontrollableReason = undefined;
  private paused = false;
  private stopped = false;

  private constructor(
    private readonly container: Started,
    readonly host: string,
    readonly port: number,
    readonly prefix: string,
    private readonly unregister: () => void,
  ) {}

  get url(): string {
    return `redis://${this.host}:${this.port}`;
  }

  static async start(options: StartRedisOptions, prefix: string): Promise<DockerRedis> {
    const { GenericContainer } = await import('testcontainers');
    const appendonly = options.appendonly ?? false;
    const command = ['redis-server', '--save', '', '--appendonly', appendonly ? 'yes' : 'no', '--maxmemory-policy', 'noeviction'];
    if (appendonly) command.push('--appendfsync', options.appendfsync ?? 'always');
    // A fixed host port (rather than a random mapping) keeps the address stable across restarts.
    const hostPort = await freePort();
    const container = await new GenericContainer(IMAGE).withExposedPorts({ container: 6379, host: hostPort }).withCommand(command).start();
    const id = container.getId();
    const unregister = onProcessEnd(() => {
      spawnSync('docker', ['rm', '-f', '-v', id], { stdio: 'ignore', timeout: 15_000 });
    });
    const reported = container.getHost();
    const host = reported === 'localhost' ? LOOPBACK : reported;
    const server = new DockerRedis(container, host, hostPort, prefix, unregister);
    try {
      await waitForPing(host, hostPort, READY_DEADLINE_MS);
    } catch (err) {
      await server.stop().catch(() => undefined);
      throw err;
    }
    return server;
  }

  private assertUsable(what: string): void {
    if (this.stopped) throw new Error(`cannot ${what}: this Redis handle was already stopped`);
  }

  async kill(): Promise<void> {
    this.assertUsable('kill');
    if (this.paused) await this.resume();
    await docker('kill', this.container.getId()).catch(() => undefined); // already dead is fine
  }

  async restart(): Promise<void> {
    this.assertUsable('restart');
    if (this.paused) await this.resume();
    await docker('restart', '-t', '10', this.container.getId());
    await waitForPing(this.host, this.port, READY_DEADLINE_MS);
  }

  async pause(): Promise<void> {
    this.assertUsable('pause');
    await docker('pause', this.container.getId());
    this.paused = true;
  }

  async resume(): Promise<void> {
    this.assertUsable('resume');
    await docker('unpause', this.container.getId());
    this.paused = false;
  }

  async stop(): Promise<void> {
    if (this.stopped) return;
    if (this.paused) await this.resume().catch(() => undefined);
    this.stopped = true;
    const id = this.container.getId();
    try {
      await this.container.stop({ timeout: 10_000 });
    } catch {
      await docker('rm', '-f', '-v', id).catch(() => undefined);
    } finally {
      this.unregister();
    }
  }
}
