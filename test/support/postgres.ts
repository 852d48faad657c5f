/**
 * A throwaway PostgreSQL cluster for tests: `initdb` into a temp directory,
 * `pg_ctl start` on a free loopback port with its socket in that directory,
 * and `pg_ctl stop` plus removal of the directory afterwards.
 *
 * The server binaries are looked up on PATH and then in Debian's
 * `/usr/lib/postgresql/<version>/bin` (not on PATH there). PostgreSQL refuses
 * to run as root, so as root the cluster belongs to the `postgres` OS user
 * (the directory is handed to it and the binaries run through `runuser`).
 * Without binaries, {@link postgresSkipReason} says why the tests are skipped.
 */
import { execFile, execFileSync, spawnSync } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { freePort, LOOPBACK } from './ports.js';

export interface PostgresHandle {
  /** `postgres://postgres@127.0.0.1:<port>/postgres`, trust authentication. */
  readonly url: string;
  readonly port: number;
  /** Stops the server (fast shutdown) and removes its directory. Idempotent. */
  stop(): Promise<void>;
  /**
   * Kills the server as a crash would (`pg_ctl stop -m immediate`: no
   * checkpoint, open transactions cut off) and starts it again on the same
   * port and data, which runs crash recovery. Resolves once it accepts connections.
   */
  crashAndRestart(): Promise<void>;
}

function findBinDir(): string | undefined {
  for (const dir of (process.env['PATH'] ?? '').split(path.delimiter)) {
    if (dir && existsSync(path.join(dir, 'initdb')) && existsSync(path.join(dir, 'pg_ctl'))) return dir;
  }
  const debian = '/usr/lib/postgresql';
  if (!existsSync(debian)) return undefined;
  const versions = readdirSync(debian)
    .filter((v) => existsSync(path.join(debian, v, 'bin', 'initdb')))
    .sort((a, b) => Number(b) - Number(a));
  return versions[0] === undefined ? undefined : path.join(debian, versions[0], 'bin');
}

const isRoot = typeof process.getuid === 'function' && process.getuid() === 0;

function postgresUser(): { uid: number; gid: number } | undefined {
  const found = spawnSync('id', ['-u', 'postgres'], { encoding: 'utf8' });
  const gid = spawnSync('id', ['-g', 'postgres'], { encoding: 'utf8' });
  if (found.status !== 0 || gid.status !== 0) return undefined;
  return { uid: Number(found.stdout.trim()), gid: Number(gid.stdout.trim()) };
}

/** Why a PostgreSQL cluster cannot be started here, or undefined when it can. */
export function postgresSkipReason(): string | undefined {
  if (!findBinDir()) return 'no initdb/pg_ctl on PATH or in /usr/lib/postgresql/<version>/bin (apt-get install postgresql)';
  if (isRoot && !postgresUser()) return 'running as root and there is no postgres OS user to own the cluster';
  if (isRoot && !existsSync('/usr/sbin/runuser') && !existsSync('/sbin/runuser')) return 'running as root without runuser';
  return undefined;
}

/**
 * Runs a server binary, as the postgres user when this process is root. Not
 * synchronously: initdb or a stop on a loaded machine can take long enough
 * that a blocked test worker misses the answers of its own test runner.
 */
async function run(bin: string, args: readonly string[]): Promise<void> {
  const [command, argv] = isRoot ? ['runuser', ['-u', 'postgres', '--', bin, ...args]] : [bin, [...args]];
  await new Promise<void>((resolve, reject) => {
    execFile(command, argv as string[], { encoding: 'utf8', timeout: 120_000 }, (error, stdout, stderr) => {
      if (error === null) return resolve();
      reject(new Error(`${path.basename(bin)} failed (${error.code ?? error.signal}): ${stderr || stdout}`));
    });
  });
}

/** Starts a new PostgreSQL cluster on a free port; stop it with {@link PostgresHandle.stop}. */
export async function startPostgres(): Promise<PostgresHandle> {
  const skip = postgresSkipReason();
  if (skip !== undefined) throw new Error(`cannot start PostgreSQL: ${skip}`);
  const bin = findBinDir()!;
  const dir = mkdtempSync(path.join(tmpdir(), 'receipts-pg-'));
  const data = path.join(dir, 'data');
  if (isRoot) {
    const owner = postgresUser()!;
    chownSync(dir, owner.uid, owner.gid);
  }
  let started = false;
  const stop = async () => {
    if (started) {
      started = false;
      try {
        await run(path.join(bin, 'pg_ctl'), ['-D', data, '-m', 'fast', '-w', 'stop']);
      } catch {
        // already gone
      }
    }
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    await run(path.join(bin, 'initdb'), ['-D', data, '-A', 'trust', '-U', 'postgres', '--no-sync', '-E', 'UTF8']);
    let lastError: unknown;
    for (let attempt = 0; attempt < 5; attempt++) {
      const port = await freePort();
      const options = `-p ${port} -k ${dir} -c listen_addresses=${LOOPBACK} -c fsync=off -c max_connections=200`;
      try {
        const start = () =>
          run(path.join(bin, 'pg_ctl'), ['-D', data, '-o', options, '-l', path.join(dir, 'log'), '-w', '-t', '60', 'start']);
        await start();
        started = true;
        const crashAndRestart = async () => {
          await run(path.join(bin, 'pg_ctl'), ['-D', data, '-m', 'immediate', '-w', 'stop']);
          await start();
        };
        return { url: `postgres://postgres@${LOOPBACK}:${port}/postgres`, port, stop, crashAndRestart };
      } catch (error) {
        lastError = error; // the port may have been taken meanwhile
      }
    }
    throw lastError;
  } catch (error) {
    await stop();
    throw error;
  }
}

/** The version line of the server binaries found, for messages. */
export function postgresVersion(): string | undefined {
  const bin = findBinDir();
  return bin ? execFileSync(path.join(bin, 'pg_ctl'), ['--version'], { encoding: 'utf8' }).trim() : undefined;
}
