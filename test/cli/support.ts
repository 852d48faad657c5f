/**
 * Shared setup for the CLI tests, on top of test/support/redis-fixture.ts
 * (one Redis server per file, stores under the file's prefix): receipts put
 * into a chosen state through the real store, a captured output, and the
 * real CLI run as a child process.
 */
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { ToolCallReceiptKey } from '../../src/core/identity.js';
import type { ReceiptStore } from '../../src/redis/receipts/store.js';
import type { Output } from '../../src/cli/format.js';
import { runnableScript } from '../support/compiled-scripts.js';
import { waitForLeaseExpiry } from '../support/redis-fixture.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/**
 * Makes the call's current opaque attempt ambiguous the way it happens in
 * production: a claim with a short lease whose worker never settles, then,
 * once the lease has run out, another claim that finds it and flags it.
 * Returns the attempt that went ambiguous.
 */
export async function makeAmbiguous(store: ReceiptStore, key: ToolCallReceiptKey, options: { flag?: boolean } = {}): Promise<number> {
  const claimed = await store.claim(key, { effect: 'opaque', leaseMs: 60 });
  if (claimed.decision.kind !== 'execute') throw new Error(`expected to execute, got ${claimed.decision.kind}`);
  await waitForLeaseExpiry(store, key);
  if (options.flag !== false) {
    const again = await store.claim(key, { effect: 'opaque' });
    if (again.decision.kind !== 'ambiguous') throw new Error(`expected ambiguous, got ${again.decision.kind}`);
  }
  return claimed.attempt as number;
}

/** An {@link Output} that keeps what was written. */
export class Capture implements Output {
  private chunks: string[] = [];
  write(text: string): boolean {
    this.chunks.push(text);
    return true;
  }
  get text(): string {
    return this.chunks.join('');
  }
  get lines(): string[] {
    return this.text.split('\n');
  }
}

export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

/** How a child process runs the CLI from the sources (transpiled once, see test/support/compiled-scripts.ts). */
const CLI_RUNNABLE = runnableScript('src/cli/main.ts');
const CLI_ENTRY = [...CLI_RUNNABLE.execArgv, CLI_RUNNABLE.script];

/** Runs `command` in the repository with `env`, resolving with its exit code and output (a non-zero exit too). */
function runInRepo(command: string, args: readonly string[], env: NodeJS.ProcessEnv): Promise<CliRun> {
  return new Promise((resolve, reject) => {
    execFile(command, args, { cwd: ROOT, env, timeout: 30_000 }, (err, stdout, stderr) => {
      if (err && typeof err.code !== 'number') {
        reject(err);
        return;
      }
      resolve({ code: err ? (err.code as number) : 0, stdout, stderr });
    });
  });
}

/** Runs the real CLI entry (`node --import tsx src/cli/main.ts …`) against `redisUrl`. */
export function spawnCli(args: readonly string[], redisUrl?: string, extraEnv: Record<string, string> = {}): Promise<CliRun> {
  const env: NodeJS.ProcessEnv = { ...process.env, ...extraEnv };
  delete env['REDIS_URL'];
  if (redisUrl !== undefined) env['REDIS_URL'] = redisUrl;
  return runInRepo(process.execPath, [...CLI_ENTRY, ...args], env);
}

/**
 * Runs the real CLI entry with its stdout piped, in a shell, into a reader
 * that has gone before the CLI writes anything (`| true`, as `| head -1`
 * leaves the pipe once head has its line): its first write fails with
 * EPIPE. `code` is the CLI's own exit code (bash's PIPESTATUS), not the
 * reader's.
 */
export function spawnCliIntoClosedPipe(args: readonly string[], redisUrl: string): Promise<CliRun> {
  const script = '"$@" | true; exit "${PIPESTATUS[0]}"';
  return runInRepo('bash', ['-c', script, 'cli', process.execPath, ...CLI_ENTRY, ...args], { ...process.env, REDIS_URL: redisUrl });
}

/** True when text looks like it carries a stack trace. */
export function hasStackTrace(text: string): boolean {
  return /\n\s+at .+:\d+:\d+\)?/.test(text);
}
