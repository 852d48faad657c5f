/**
 * Redis for tests. `startRedis()` gives each test (or suite) its own server
 * and key prefix, and lets fault tests SIGKILL, restart, pause and resume it.
 *
 * Where the server comes from, first match wins:
 * 1. `REDIS_URL` is set: that server is used as is. It is not ours, so the
 *    handle is not controllable and `stop()` leaves the server and its data
 *    alone (no FLUSHALL); the unique prefix keeps tests apart.
 * 2. `redis-server` is on PATH: a child process on a free 127.0.0.1 port in a
 *    fresh temp dir, killed when the test process exits.
 * 3. `docker info` succeeds: a `redis:7` container via testcontainers, with
 *    kill/restart/pause/resume mapped to docker kill/restart/pause/unpause.
 * Otherwise `startRedis()` rejects with a sentence saying what to install.
 */
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { DockerRedis, dockerUsable } from './redis-docker.js';
import { LocalRedis, findOnPath } from './redis-process.js';

/** A running Redis server for one test or suite, plus the means to hurt it. */
export interface RedisHandle {
  /** Connection URL, `redis://127.0.0.1:PORT` for servers the harness started. */
  url: string;
  host: string;
  port: number;
  /** true when this handle owns the server process (may kill/restart/pause it). */
  controllable: boolean;
  /** Why fault operations are unavailable (set only when `controllable` is false). */
  uncontrollableReason?: string;
  /**
   * A key prefix unique to this handle, `t` plus random hex with no separator
   * (e.g. `t3f9a0c12be`); append your own `:` or pass it as a BullMQ prefix.
   */
  prefix: string;
  /** Graceful shutdown (SIGTERM, SIGKILL after 10 s) and removal of the temp dir. Idempotent. */
  stop(): Promise<void>;
  /** SIGKILL the server and wait until it has exited. No-op if it is already dead. */
  kill(): Promise<void>;
  /**
   * Start the server again on the same port and in the same directory, so the
   * AOF survives when appendonly is on; a server still running is shut down
   * gracefully first. Resolves once PING answers.
   */
  restart(): Promise<void>;
  /** SIGSTOP: the server keeps its connections but answers nothing until resumed. */
  pause(): Promise<void>;
  /** SIGCONT: undo {@link RedisHandle.pause}; commands sent meanwhile are then answered. */
  resume(): Promise<void>;
}

/** How to configure a server the harness starts itself (ignored with `REDIS_URL`). */
export interface StartRedisOptions {
  /** Turn the append-only file on. Default false. */
  appendonly?: boolean;
  /** fsync policy of the AOF; default 'always' when appendonly is on. */
  appendfsync?: 'always' | 'everysec' | 'no';
  /**
   * Start the server in cluster mode, with no slots yet (see
   * `startRedisCluster`). Local `redis-server` only.
   */
  cluster?: boolean;
  /** More `redis-server` arguments, e.g. `['--replicaof', host, port]`. Local `redis-server` only. */
  extraArgs?: readonly string[];
  /**
   * Start a Sentinel instead (`redis-server <file> --sentinel`) whose config
   * file holds these lines after its port, bind and dir. Local only.
   */
  sentinelConfig?: string;
}

/** A fresh `t<random hex>` key prefix. */
export function uniquePrefix(): string {
  return `t${randomBytes(5).toString('hex')}`;
}

function redact(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = '***';
    return parsed.toString();
  } catch {
    return '(unparseable URL)';
  }
}

const EXTERNAL_REASON = 'REDIS_URL is set, so tests use a server this process does not own and cannot kill, restart or pause';

/** A server named by REDIS_URL: shared, never killed, never flushed. */
class ExternalRedis implements RedisHandle {
  readonly controllable = false;
  readonly uncontrollableReason = EXTERNAL_REASON;
  readonly prefix = uniquePrefix();
  readonly host: string;
  readonly port: number;

  constructor(readonly url: string) {
    const parsed = new URL(url);
    this.host = parsed.hostname || '127.0.0.1';
    this.port = parsed.port ? Number(parsed.port) : 6379;
  }

  private refuse(what: string): Promise<never> {
    return Promise.reject(new Error(`cannot ${what} Redis: ${EXTERNAL_REASON}`));
  }

  async stop(): Promise<void> {
    // Not our server: leave it and its data alone.
  }
  kill(): Promise<void> {
    return this.refuse('kill');
  }
  restart(): Promise<void> {
    return this.refuse('restart');
  }
  pause(): Promise<void> {
    return this.refuse('pause');
  }
  resume(): Promise<void> {
    return this.refuse('resume');
  }
}

async function connectExternal(url: string): Promise<RedisHandle> {
  const client = new Redis(url, {
    lazyConnect: true,
    connectTimeout: 10_000,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  });
  let lastError: Error | undefined;
  client.on('error', (err: Error) => (lastError = err));
  try {
    await client.connect();
    await client.ping();
  } catch (err) {
    const cause = (lastError ?? (err as Error)).message;
    throw new Error(`REDIS_URL=${redact(url)} is set but that server did not answer PING: ${cause}`);
  } finally {
    client.disconnect();
  }
  return new ExternalRedis(url);
}

/**
 * Starts (or, with `REDIS_URL`, connects to) a Redis server for one test or
 * suite and resolves once it answers PING. Always pair it with
 * `await handle.stop()` in afterEach/afterAll.
 */
export async function startRedis(options: StartRedisOptions = {}): Promise<RedisHandle> {
  const external = process.env.REDIS_URL;
  if (external) return connectExternal(external);
  const binary = findOnPath('redis-server');
  if (binary) return LocalRedis.start(binary, options, uniquePrefix());
  if (dockerUsable()) return DockerRedis.start(options, uniquePrefix());
  throw new Error(
    'No Redis for tests: install redis-server (apt-get install redis-server), start Docker, or set REDIS_URL to a server the tests may use.',
  );
}

/**
 * Why fault tests (kill/restart/pause) cannot run in this environment, or
 * undefined when they can. Decided without starting a server, so it can be
 * used while tests are being collected.
 */
export function faultSkipReason(): string | undefined {
  return process.env.REDIS_URL ? EXTERNAL_REASON : undefined;
}

let warned = false;

/**
 * True when fault tests can run here. When they cannot, warns once with the
 * reason, since vitest itself only reports "skipped". Meant for
 * `it.skipIf(!faultTestsSupported())(...)`.
 */
export function faultTestsSupported(): boolean {
  const reason = faultSkipReason();
  if (reason !== undefined && !warned) {
    warned = true;
    console.warn(`[redis harness] skipping fault tests: ${reason}`);
  }
  return reason === undefined;
}

/**
 * Skips the running test, with the reason as vitest's skip note, when
 * `handle` cannot be killed, restarted or paused. Pass the test context:
 * `it('...', (ctx) => { skipUnlessControllable(redis, ctx); ... })`.
 */
export function skipUnlessControllable(handle: RedisHandle, ctx: { skip: (note?: string) => never }): void {
  if (!handle.controllable) {
    const reason = handle.uncontrollableReason ?? 'this Redis handle is not controllable';
    console.warn(`[redis harness] skipping: ${reason}`);
    ctx.skip(reason);
  }
}
