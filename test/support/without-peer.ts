/**
 * Runs test/fixtures/without-peer/app.ts in a process where the `hidden`
 * packages (comma-separated; a name ending in `/` hides a whole scope)
 * cannot be resolved, and returns its report: the package's entry points,
 * those that loaded (all but the optional ones), the result of one job run
 * through a real Worker, and what importing each optional entry did.
 */
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export interface WithoutPeerReport {
  readonly entries: string[];
  readonly loaded: string[];
  readonly result: unknown;
  /** What importing the (first) optional entry did: `loaded`, or the error's code. */
  readonly optionalImport: string;
  /** The same for every optional entry. */
  readonly optionalImports: Record<string, string>;
}

const dir = new URL('../fixtures/without-peer/', import.meta.url);

export async function runWithoutPeer(options: {
  hidden: string;
  /** The entry (or comma-separated entries) that need the hidden packages. */
  optionalEntry: string;
  redisUrl: string;
  prefix: string;
}): Promise<WithoutPeerReport> {
  const child = fork(fileURLToPath(new URL('app.ts', dir)), [], {
    env: {
      ...process.env,
      REDIS_URL: options.redisUrl,
      PREFIX: options.prefix,
      HIDDEN_PACKAGES: options.hidden,
      OPTIONAL_ENTRY: options.optionalEntry,
    },
    execArgv: ['--import', fileURLToPath(new URL('register.mjs', dir)), '--import', 'tsx'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  try {
    return await new Promise<WithoutPeerReport>((resolve, reject) => {
      child.once('message', (m) => resolve(m as WithoutPeerReport));
      child.once('exit', (code) => reject(new Error(`app exited with ${code} before reporting`)));
    });
  } finally {
    await new Promise((resolve) => (child.exitCode !== null ? resolve(undefined) : child.once('exit', resolve)));
  }
}
