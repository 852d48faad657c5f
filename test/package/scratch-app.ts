/**
 * Builds and packs this package the way it is published, and makes scratch
 * apps that install the tarball beside their own bullmq, ioredis and zod, as a
 * new user would. Commands run for real (npm, tsc, node); nothing is faked.
 */
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const repoRoot = fileURLToPath(new URL('../../', import.meta.url));
const appSources = fileURLToPath(new URL('./app/', import.meta.url));
const tscBin = createRequire(import.meta.url).resolve('typescript/bin/tsc');

export interface Ran {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/**
 * Runs a command and resolves with its exit code and output, never rejecting
 * on a non-zero exit; one that outlives `timeoutMs` is killed and says so (the
 * default leaves room for a loaded two-core machine compiling three apps at once). npm's own `npm_*` variables (set when this runs under
 * `npm test`) are dropped, so a nested npm acts on `cwd`, not on this repo.
 */
export function run(
  command: string,
  args: readonly string[],
  cwd: string,
  env: Record<string, string> = {},
  timeoutMs = 240_000,
): Promise<Ran> {
  const inherited = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('npm_')));
  return new Promise((resolve) => {
    const options = { cwd, env: { ...inherited, ...env }, maxBuffer: 64 * 1024 * 1024, timeout: timeoutMs, killSignal: 'SIGKILL' as const };
    execFile(command, args, options, (error, stdout, stderr) => {
      const code = error === null ? 0 : typeof error.code === 'number' ? error.code : 1;
      const killed = error?.killed === true ? ` (killed after ${timeoutMs / 1000} s without finishing)` : '';
      resolve({ code, stdout, stderr: error !== null && typeof error.code !== 'number' ? `${stderr}\n${error.message}${killed}` : stderr });
    });
  });
}

/** `ran`, or an error carrying its output when the command failed. */
export function succeeded(what: string, ran: Ran): Ran {
  if (ran.code !== 0) throw new Error(`${what} exited ${ran.code}\n${ran.stdout}\n${ran.stderr}`);
  return ran;
}

/** One file the tarball holds, as `npm pack --json` lists it. */
export interface PackedFile {
  readonly path: string;
}

/**
 * Packs the package as `npm publish` would: its `prepack` script builds `dist`
 * from scratch first. Resolves with the tarball's path and file list.
 */
export async function buildAndPack(into: string): Promise<{ tarball: string; files: string[] }> {
  const packed = succeeded('npm pack', await run('npm', ['pack', '--json', '--pack-destination', into], repoRoot));
  const [entry] = JSON.parse(packed.stdout) as { filename: string; files: PackedFile[] }[];
  if (!entry) throw new Error(`npm pack printed no entry: ${packed.stdout}`);
  return { tarball: path.join(into, entry.filename), files: entry.files.map((file) => file.path).sort() };
}

/**
 * A typecheck's outcome. `code` is tsc's, except that errors inside another
 * package's own declarations (a peer such as ioredis publishing a release
 * whose `.d.ts` names an untyped module) do not fail it: those are listed in
 * `peerErrors` for the test to report, since a test that pins nothing must not
 * turn red because a peer published. Errors in the app's sources and in this
 * package's declarations still fail, and are all that `stdout` keeps.
 */
export interface Typechecked extends Ran {
  readonly peerErrors: readonly string[];
}

/** A scratch app: its directory and how to run tools in it. */
export interface ScratchApp {
  readonly dir: string;
  /** `tsc` (this repo's TypeScript) over the app's `src`, emitting to `out` (it emits despite errors). */
  typecheck(): Promise<Typechecked>;
  /** The installed version of each of `names` (from its package.json in the app's node_modules). */
  versionsOf(names: readonly string[]): Promise<Record<string, string>>;
  /** `node <file>` in the app with extra environment. */
  node(file: string, env: Record<string, string>): Promise<Ran>;
  /** The directories of `name` that `npm ls --all --parseable` lists. */
  copiesOf(names: readonly string[]): Promise<Record<string, string[]>>;
}

/**
 * Makes an app in a new temp dir with `dependencies` (spec per name, e.g.
 * `bullmq: '^5'`) plus the tarball, installs it, and copies in the app
 * sources and `extraSources` (file name → text) under `src/`.
 */
export async function scratchApp(
  name: string,
  tarball: string,
  dependencies: Record<string, string>,
  extraSources: Record<string, string> = {},
  /** The app's own files: the ioredis worker, quick start and CommonJS script, or only `use-node-redis.ts` (as `src/use.ts`). */
  kind: 'ioredis' | 'node-redis' = 'ioredis',
): Promise<ScratchApp> {
  const dir = await mkdtemp(path.join(tmpdir(), `trc-consumer-${name}-`));
  const manifest = {
    name: `scratch-${name}`,
    private: true,
    type: 'module',
    dependencies: { ...dependencies, 'bullmq-tool-receipts': `file:${tarball}` },
  };
  await writeFile(path.join(dir, 'package.json'), `${JSON.stringify(manifest, null, 2)}\n`);
  const tsconfig = {
    compilerOptions: {
      target: 'ES2022',
      // DOM for the fetch types (HeadersInit) the MCP SDK's declarations use, as docs/mcp.md says.
      lib: ['ES2022', 'DOM'],
      module: 'NodeNext',
      moduleResolution: 'NodeNext',
      strict: true,
      noUncheckedIndexedAccess: true,
      // The strictest optional properties a user may turn on: the README's and docs' blocks compile under them too.
      exactOptionalPropertyTypes: true,
      skipLibCheck: false,
      types: ['node'],
      typeRoots: [path.join(repoRoot, 'node_modules/@types')],
      rootDir: 'src',
      outDir: 'out',
    },
    include: ['src'],
  };
  await writeFile(path.join(dir, 'tsconfig.json'), `${JSON.stringify(tsconfig, null, 2)}\n`);
  await mkdir(path.join(dir, 'src'));
  if (kind === 'node-redis') {
    await writeFile(path.join(dir, 'src', 'use.ts'), await readFile(path.join(appSources, 'use-node-redis.ts')));
  } else {
    for (const file of ['use.ts', 'host.d.ts']) {
      await writeFile(path.join(dir, 'src', file), await readFile(path.join(appSources, file)));
    }
    // The front page's worker + producer, exactly as the package ships it.
    await writeFile(path.join(dir, 'src', 'quickstart.ts'), await readFile(path.join(repoRoot, 'examples', 'quickstart.ts')));
    await writeFile(path.join(dir, 'require.cjs'), await readFile(path.join(appSources, 'require.cjs')));
  }
  // drizzle-orm's own declarations do not compile with skipLibCheck off (they name peers a PostgreSQL app
  // lacks, such as gel and mysql2), so a source importing it is checked in a second pass that skips library
  // declarations, as Drizzle's users compile. Everything else, this package's declarations included, stays strict.
  const needsLibsSkipped = (text: string) => /from 'drizzle-orm/.test(text);
  const skipped = Object.entries(extraSources).filter(([, text]) => needsLibsSkipped(text));
  for (const [file, text] of Object.entries(extraSources)) {
    if (!needsLibsSkipped(text)) await writeFile(path.join(dir, 'src', file), text);
  }
  if (skipped.length > 0) {
    await mkdir(path.join(dir, 'libs-skipped'));
    for (const [file, text] of skipped) await writeFile(path.join(dir, 'libs-skipped', file), text);
    const second = {
      extends: './tsconfig.json',
      compilerOptions: { skipLibCheck: true, noEmit: true, rootDir: '.' },
      include: ['libs-skipped', 'src/*.d.ts'],
    };
    await writeFile(path.join(dir, 'tsconfig.libs-skipped.json'), `${JSON.stringify(second, null, 2)}\n`);
  }
  succeeded(
    `npm install in ${name}`,
    await run('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', '--loglevel=error'], dir, {}, 240_000),
  );
  return {
    dir,
    async typecheck() {
      const strict = await run(process.execPath, [tscBin, '-p', 'tsconfig.json'], dir);
      const both =
        skipped.length === 0
          ? strict
          : await run(process.execPath, [tscBin, '-p', 'tsconfig.libs-skipped.json'], dir).then((second) => ({
              code: strict.code || second.code,
              stdout: strict.stdout + second.stdout,
              stderr: strict.stderr + second.stderr,
            }));
      return splitPeerErrors(both);
    },
    async versionsOf(names) {
      const versions = await Promise.all(
        names.map(async (dep) => {
          const manifest = await readFile(path.join(dir, 'node_modules', dep, 'package.json'), 'utf8').catch(() => undefined);
          return [dep, manifest === undefined ? 'absent' : (JSON.parse(manifest) as { version: string }).version] as const;
        }),
      );
      return Object.fromEntries(versions);
    },
    node: (file, env) => run(process.execPath, [file], dir, env, 60_000),
    async copiesOf(names) {
      const listed = succeeded(`npm ls in ${name}`, await run('npm', ['ls', '--all', '--parseable'], dir));
      const lines = listed.stdout.split('\n').map((line) => line.trim());
      return Object.fromEntries(names.map((n) => [n, lines.filter((line) => line.endsWith(`${path.sep}node_modules${path.sep}${n}`))]));
    },
  };
}

/** The package whose declarations are ours: errors in them always fail. */
const OWN_PACKAGE = 'node_modules/bullmq-tool-receipts/';

/**
 * Splits tsc's output into diagnostics (a line that starts a new one is not
 * indented) and moves those located in another package's declarations under
 * `node_modules/` into `peerErrors`. The exit code stays tsc's when anything
 * else is left, or when tsc failed without printing a diagnostic (a crash).
 */
export function splitPeerErrors(ran: Ran): Typechecked {
  const diagnostics: string[] = [];
  for (const line of ran.stdout.split('\n')) {
    if (line === '') continue;
    if (/^\s/.test(line) && diagnostics.length > 0) diagnostics[diagnostics.length - 1] += `\n${line}`;
    else diagnostics.push(line);
  }
  const isPeer = (diagnostic: string) => diagnostic.startsWith('node_modules/') && !diagnostic.startsWith(OWN_PACKAGE);
  const peerErrors = diagnostics.filter(isPeer);
  const own = diagnostics.filter((diagnostic) => !isPeer(diagnostic));
  const onlyPeers = ran.code !== 0 && peerErrors.length > 0 && own.length === 0 && ran.stderr === '';
  return {
    code: onlyPeers ? 0 : ran.code,
    stdout: own.map((diagnostic) => `${diagnostic}\n`).join(''),
    stderr: ran.stderr,
    peerErrors,
  };
}

/** The last `RESULT <json>` line a scratch script printed. */
export function resultOf(ran: Ran): unknown {
  const line = ran.stdout
    .split('\n')
    .reverse()
    .find((l) => l.startsWith('RESULT '));
  if (line === undefined) throw new Error(`no RESULT line (exit ${ran.code})\n${ran.stdout}\n${ran.stderr}`);
  return JSON.parse(line.slice('RESULT '.length));
}

/**
 * The TypeScript blocks of markdown pages (page name → text), each as its own
 * module file: `readme-<n>.ts` for README.md, `docs-<page>-<n>.ts` for
 * docs/<page>.md. The host objects they assume come from `host.d.ts`.
 */
export function markdownBlocks(pages: Record<string, string>): Record<string, string> {
  const files: Record<string, string> = {};
  for (const [page, text] of Object.entries(pages)) {
    const stem = page === 'README.md' ? 'readme' : `docs-${path.basename(page, '.md')}`;
    const blocks = [...text.matchAll(/^```ts\n([\s\S]*?)^```$/gm)].map((match) => match[1] ?? '');
    blocks.forEach((code, i) => {
      files[`${stem}-${i + 1}.ts`] = `${code}export {};\n`;
    });
  }
  return files;
}
