/**
 * Real worker processes for crash tests: forked with tsx, talking over IPC,
 * and killable with real signals.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { onProcessEnd } from './cleanup.js';
import { runnableScript } from './compiled-scripts.js';

/** A message a fixture process sent. */
export type WorkerMessage = { type: string; [field: string]: unknown };

/** A forked worker process and everything it has said so far. */
export interface WorkerProcess {
  readonly child: ChildProcess;
  readonly messages: WorkerMessage[];
  /** Resolves with the first message (past or future) that matches, or rejects after `timeoutMs`. */
  waitFor(match: (m: WorkerMessage) => boolean, timeoutMs?: number): Promise<WorkerMessage>;
  /** Send a signal; for SIGKILL, resolves once the process has exited. */
  signal(signal: NodeJS.Signals): Promise<void>;
}

/** Fixtures that start a TypeScript file found beside them (the MCP worker its server). */
const STARTS_TYPESCRIPT = new Set(['mcp/worker']);

/**
 * Fork `test/fixtures/<fixture>.ts` with `env` added (its transpiled
 * JavaScript, see ./compiled-scripts.ts), and wait until it reports `ready`.
 */
export async function spawnWorkerProcess(fixture: string, env: Record<string, string>): Promise<WorkerProcess> {
  const source = fileURLToPath(new URL(`../fixtures/${fixture}.ts`, import.meta.url));
  // A fixture that starts TypeScript of its own, by a path beside it, runs from the sources under tsx.
  const { script, execArgv } = STARTS_TYPESCRIPT.has(fixture) ? { script: source, execArgv: ['--import', 'tsx'] } : runnableScript(source);
  const child = fork(script, [], {
    env: { ...process.env, ...env },
    execArgv: [...execArgv],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const unregister = onProcessEnd(() => child.kill('SIGKILL'));
  child.once('exit', () => unregister());
  const messages: WorkerMessage[] = [];
  const waiters = new Set<() => void>();
  child.on('message', (m) => {
    messages.push(m as WorkerMessage);
    for (const wake of waiters) wake();
  });

  const waitFor = (match: (m: WorkerMessage) => boolean, timeoutMs = 20_000) =>
    new Promise<WorkerMessage>((resolve, reject) => {
      const check = () => {
        const found = messages.find(match);
        if (found) {
          cleanup();
          resolve(found);
        }
      };
      const timer = setTimeout(() => {
        cleanup();
        reject(new Error(`worker ${child.pid} did not send the expected message; got: ${JSON.stringify(messages.map((m) => m.type))}`));
      }, timeoutMs);
      const onExit = () => {
        check();
        cleanup();
        reject(new Error(`worker ${child.pid} exited before sending the expected message`));
      };
      const cleanup = () => {
        clearTimeout(timer);
        waiters.delete(check);
        child.off('exit', onExit);
      };
      waiters.add(check);
      child.once('exit', onExit);
      check();
    });

  const signal = async (sig: NodeJS.Signals) => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.kill(sig);
    if (sig === 'SIGKILL') await exited;
  };

  // Generous: eight workers starting at once on a loaded 2-core machine each compile their sources first.
  await waitFor((m) => m.type === 'ready', 120_000);
  return { child, messages, waitFor, signal };
}
