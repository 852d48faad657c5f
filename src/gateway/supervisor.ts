/**
 * The worker processes a gateway started with `--workers n` keeps running:
 * each a child process (`tool-receipts gateway --worker`), started again
 * when it exits, sooner when it had run a while, later when it keeps dying
 * at start. A child sees its parent go (its IPC channel closes) and stops.
 */
import { fork, type ChildProcess } from 'node:child_process';
import type { Logger } from 'pino';

/** How to start one worker process. */
export interface WorkerCommand {
  readonly script: string;
  readonly args: readonly string[];
  readonly execArgv: readonly string[];
  readonly env: Readonly<Record<string, string | undefined>>;
}

/** Worker processes kept running. */
export interface WorkerPool {
  /** The running children's pids. */
  pids(): number[];
  /** Stops them (SIGTERM, then SIGKILL after 10 s) and starts no more. */
  stop(): Promise<void>;
}

const FIRST_DELAY_MS = 500;
const MAX_DELAY_MS = 30_000;

/** How long a stopping gateway process waits for its running calls and connections to close before it exits anyway. */
export const GATEWAY_STOP_GRACE_MS = 30_000;

/**
 * How long the front waits for a worker it started to exit once told to
 * stop: the worker's own grace, then a margin for its exit. Shorter, and a
 * call the worker was still finishing would be cut off mid-effect.
 */
const CHILD_STOP_MS = GATEWAY_STOP_GRACE_MS + 5_000;
/** A child that ran this long had started well: the next restart is quick again. */
const HEALTHY_AFTER_MS = 10_000;

/** Starts `count` worker processes and restarts each when it exits, until stopped. */
export function superviseWorkers(count: number, command: WorkerCommand, logger: Logger): WorkerPool {
  const children = new Set<ChildProcess>();
  let stopping = false;
  const start = (slot: number, delayMs: number): void => {
    if (stopping) return;
    const startedAt = Date.now();
    // Its output joins the gateway's stderr: over stdio, the gateway's stdout is the MCP channel.
    const child = fork(command.script, [...command.args], {
      execArgv: [...command.execArgv],
      env: { ...command.env },
      stdio: ['ignore', 2, 2, 'ipc'],
    });
    children.add(child);
    child.on('error', (error) => logger.error({ err: error, slot }, 'a gateway worker process could not be started'));
    child.once('exit', (code, signal) => {
      children.delete(child);
      if (stopping) return;
      const healthy = Date.now() - startedAt > HEALTHY_AFTER_MS;
      const next = healthy ? FIRST_DELAY_MS : Math.min(delayMs * 2, MAX_DELAY_MS);
      logger.warn({ pid: child.pid, code, signal, slot, restartInMs: next }, 'a gateway worker process exited; starting another');
      setTimeout(() => start(slot, next), next).unref();
    });
  };
  for (let slot = 0; slot < count; slot++) start(slot, FIRST_DELAY_MS / 2);
  return {
    pids: () => [...children].flatMap((child) => (child.pid === undefined ? [] : [child.pid])),
    stop: async () => {
      stopping = true;
      await Promise.all(
        [...children].map(
          (child) =>
            new Promise<void>((resolve) => {
              if (child.exitCode !== null || child.signalCode !== null) return resolve();
              const kill = setTimeout(() => child.kill('SIGKILL'), CHILD_STOP_MS);
              child.once('exit', () => (clearTimeout(kill), resolve()));
              child.kill('SIGTERM');
            }),
        ),
      );
    },
  };
}
