/**
 * An earlier release of this package, as a directory a worker process or a
 * CLI can run from, for the rolling-deploy tests: `dist/`, `lua/` and
 * `package.json` of that release, with this checkout's `node_modules` linked
 * in (the same bullmq, ioredis and zod a user's app would give it). Two are
 * kept: {@link PREVIOUS_RELEASE_COMMIT}, the one most deploy tests run, and
 * {@link PRE_COMPACT_RELEASE_COMMIT}, the last before the compact layout.
 *
 * Where it comes from, first match wins:
 * 1. The release as `npm pack` packed it, kept in
 *    `test/fixtures/previous-release/` (see its README): what its users
 *    installed, unpacked in well under a second.
 * 2. Otherwise (a commit with no tarball kept): `git archive` of the commit
 *    from the repository's history, compiled with `tsc -p
 *    tsconfig.build.json` (about 7 to 16 s of a 2-core machine each).
 * `PREVIOUS_RELEASE_FROM=history` (or `tarball`) picks one;
 * `test/deploy/previous-release.test.ts` makes both and compares them.
 *
 * It is made once and kept in the OS temp dir under the commit's name, so
 * later runs (and parallel test files) reuse it; a half-made copy is never
 * used (it is built aside and renamed into place).
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readFile, realpath, rename, rm, symlink, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** The commit main stood on when rolling deploys were first tested: the release a deploy replaces. */
export const PREVIOUS_RELEASE_COMMIT = '522c766cc54ade167b503909a7c36dd50652065a';
/**
 * The last commit before receipt layout 5 (the compact one): it reads layouts
 * up to 4 and refuses a layout-5 receipt with `receipt.version`; the release a
 * fleet moving to layout 5 starts from.
 */
export const PRE_COMPACT_RELEASE_COMMIT = '867854b542a5c0edd75cb897aa4c54a3780b3969';
/** Every release kept packed in `test/fixtures/previous-release/`. */
export const PACKED_RELEASE_COMMITS = [PREVIOUS_RELEASE_COMMIT, PRE_COMPACT_RELEASE_COMMIT] as const;

const repoRoot = fileURLToPath(new URL('../../', import.meta.url));
/** The packed release of a commit (see the folder's README). */
export const tarballOf = (commit: string) =>
  fileURLToPath(new URL(`../fixtures/previous-release/bullmq-tool-receipts-${commit.slice(0, 7)}.tgz`, import.meta.url));
const tscBin = createRequire(import.meta.url).resolve('typescript/bin/tsc');
/** Written last into a finished copy. */
const MARKER = '.previous-release.json';

/** A previous release ready to run. */
export interface PreviousRelease {
  /** The package's root: `dist/`, `lua/`, `package.json`, `node_modules` (linked). */
  readonly root: string;
  readonly commit: string;
  /** How it was made. */
  readonly from: 'history' | 'tarball';
  /** The package root entry (`dist/index.js`), for a worker. */
  readonly entry: string;
  /** The `/redis` entry, for a store. */
  readonly redisEntry: string;
  /** The CLI (`dist/cli/main.js`), to run with `node`. */
  readonly cli: string;
}

function sh(command: string, args: readonly string[], cwd: string): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(command, args, { cwd, maxBuffer: 64 * 1024 * 1024, timeout: 180_000 }, (error, stdout, stderr) => {
      if (error) reject(new Error(`${command} ${args.join(' ')} failed in ${cwd}: ${error.message}\n${stdout}\n${stderr}`));
      else resolve(stdout);
    });
  });
}

/** Whether this checkout's history holds the commit. */
export async function historyHasCommit(commit = PREVIOUS_RELEASE_COMMIT): Promise<boolean> {
  return sh('git', ['cat-file', '-e', `${commit}^{commit}`], repoRoot).then(
    () => true,
    () => false,
  );
}

/** `git archive` of the commit, compiled as the release was. */
async function fromHistory(dir: string, commit: string): Promise<void> {
  const archive = path.join(dir, '.source.tar');
  await sh('git', ['archive', '--format=tar', '-o', archive, commit], repoRoot);
  await sh('tar', ['-xf', archive, '-C', dir], dir);
  await rm(archive);
  await symlink(await realpath(path.join(repoRoot, 'node_modules')), path.join(dir, 'node_modules'), 'dir');
  await sh(process.execPath, [tscBin, '-p', 'tsconfig.build.json'], dir);
}

/** The packed release, unpacked. */
async function fromTarball(dir: string, commit: string): Promise<void> {
  await sh('tar', ['-xzf', tarballOf(commit), '-C', dir, '--strip-components=1'], dir);
  await symlink(await realpath(path.join(repoRoot, 'node_modules')), path.join(dir, 'node_modules'), 'dir');
}

function describe(root: string, commit: string, from: PreviousRelease['from']): PreviousRelease {
  return {
    root,
    commit,
    from,
    entry: path.join(root, 'dist', 'index.js'),
    redisEntry: path.join(root, 'dist', 'redis', 'index.js'),
    cli: path.join(root, 'dist', 'cli', 'main.js'),
  };
}

/**
 * Points a reused copy's `node_modules` at this checkout's when the checkout
 * that made the copy is gone (its link dangles), so one removed worktree
 * cannot break every later run on the machine.
 */
async function relinkModules(root: string): Promise<void> {
  const link = path.join(root, 'node_modules');
  if (existsSync(link)) return; // existsSync follows the link: a live target
  await rm(link, { force: true });
  await symlink(await realpath(path.join(repoRoot, 'node_modules')), link, 'dir').catch((error: NodeJS.ErrnoException) => {
    // Another test process relinked it first.
    if (error.code !== 'EEXIST') throw error;
  });
}

/**
 * The previous release ({@link PREVIOUS_RELEASE_COMMIT}), made on first use
 * and reused after: from `from` when given, else as the file's comment says.
 */
export function previousRelease(from?: PreviousRelease['from']): Promise<PreviousRelease> {
  return releaseAt(PREVIOUS_RELEASE_COMMIT, from);
}

/**
 * The release at `commit` (one of {@link PACKED_RELEASE_COMMITS}, so a
 * checkout without the history has its tarball), made on first use and
 * reused after: from `from` when given, else as the file's comment says.
 */
export async function releaseAt(commit: string, from?: PreviousRelease['from']): Promise<PreviousRelease> {
  const asked = from ?? process.env['PREVIOUS_RELEASE_FROM'];
  if (asked !== undefined && asked !== 'history' && asked !== 'tarball') {
    throw new Error(`PREVIOUS_RELEASE_FROM is ${JSON.stringify(asked)}; use history or tarball`);
  }
  const source = asked ?? (existsSync(tarballOf(commit)) ? 'tarball' : 'history');
  const root = path.join(tmpdir(), `bullmq-tool-receipts-release-${commit.slice(0, 12)}-${source}`);
  if (existsSync(path.join(root, MARKER))) {
    await relinkModules(root);
    return describe(root, commit, source);
  }

  const partial = `${root}.partial-${process.pid}-${randomBytes(3).toString('hex')}`;
  await mkdir(partial, { recursive: true });
  try {
    if (source === 'history') await fromHistory(partial, commit);
    else await fromTarball(partial, commit);
    if (!existsSync(path.join(partial, 'dist', 'index.js')) || !existsSync(path.join(partial, 'lua', 'claim-4.lua'))) {
      throw new Error(`the previous release made in ${partial} has no dist/index.js or lua/claim-4.lua`);
    }
    await writeFile(path.join(partial, MARKER), JSON.stringify({ commit, from: source }));
    await rename(partial, root).catch(async (error: NodeJS.ErrnoException) => {
      // Another test process finished first: use its copy.
      if (!existsSync(path.join(root, MARKER))) throw error;
      await rm(partial, { recursive: true, force: true });
    });
  } catch (error) {
    await rm(partial, { recursive: true, force: true });
    throw error;
  }
  const marker = JSON.parse(await readFile(path.join(root, MARKER), 'utf8')) as { commit: string };
  if (marker.commit !== commit) throw new Error(`${root} holds ${marker.commit}, not ${commit}`);
  return describe(root, commit, source);
}
