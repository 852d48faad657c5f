/**
 * The repository's TypeScript transpiled once per change of its sources, so
 * a test that starts many processes (worker fleets under SIGKILL, the CLI)
 * starts plain Node on JavaScript, about 0.4 s of CPU a process, instead of
 * tsx transforming the sources again in each, about 1.2 s. The output lives
 * in node_modules/.cache under a digest of every source it holds, so two
 * test processes building at once, or a run after an edit, never use a
 * stale or half-written tree. Anything that keeps it from building falls
 * back to tsx, as before.
 */
import { createHash } from 'node:crypto';
import { createRequire } from 'node:module';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
/** What a started script may import: the package, its examples and the tests' own helpers and fixtures. */
const SOURCE_DIRS = ['src', 'examples', 'test', 'scripts'];

/** Every TypeScript file of the source folders that a process may load (not the test files themselves). */
function sourceFiles(): string[] {
  const files: string[] = [];
  const walk = (dir: string) => {
    for (const entry of readdirSync(join(ROOT, dir), { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts') && !entry.name.endsWith('.test.ts')) files.push(path);
    }
  };
  for (const dir of SOURCE_DIRS) if (existsSync(join(ROOT, dir))) walk(dir);
  return files.sort();
}

/** `bullmq-tool-receipts` and its subpaths, as tsconfig's paths map them to the sources: relative to `from`. */
function withPackagePaths(code: string, from: string): string {
  return code.replace(
    /((?:from|import)\s*\(?\s*)(['"])bullmq-tool-receipts(?:\/([\w-]+))?\2/g,
    (_all, lead: string, quote: string, sub?: string) => {
      const target = join('src', sub ?? '', 'index.js');
      let path = relative(dirname(from), target).split(sep).join('/');
      if (!path.startsWith('.')) path = `./${path}`;
      return `${lead}${quote}${path}${quote}`;
    },
  );
}

/** Transpiles `files` into `out`, beside the package manifest (ESM, the version the CLI prints) and a link to lua/. */
function build(files: readonly string[], out: string): void {
  // Loaded here, not on import: most test processes find the tree built, and TypeScript takes about 0.2 s to load.
  const ts = createRequire(import.meta.url)('typescript') as typeof import('typescript');
  for (const file of files) {
    const { outputText } = ts.transpileModule(readFileSync(join(ROOT, file), 'utf8'), {
      fileName: file,
      compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022, sourceMap: false },
    });
    const target = join(out, file.replace(/\.ts$/, '.js'));
    mkdirSync(dirname(target), { recursive: true });
    writeFileSync(target, withPackagePaths(outputText, file));
  }
  writeFileSync(join(out, 'package.json'), readFileSync(join(ROOT, 'package.json')));
  symlinkSync(join(ROOT, 'lua'), join(out, 'lua'), 'dir');
}

/** Removes the trees of sources a day old or more (edits since), keeping `current`. */
function forgetOldTrees(cache: string, current: string): void {
  const dayAgo = Date.now() - 86_400_000;
  for (const entry of readdirSync(cache)) {
    const path = join(cache, entry);
    if (path !== current && statSync(path).mtimeMs < dayAgo) rmSync(path, { recursive: true, force: true });
  }
}

let built: string | null | undefined;

/** The transpiled tree's folder, built on first use; `null` when it cannot be built. */
function compiledRoot(): string | null {
  if (built !== undefined) return built;
  try {
    const files = sourceFiles();
    const digest = createHash('sha256');
    // package.json too: the tree holds a copy (the CLI prints its version).
    for (const file of [...files, 'package.json'])
      digest
        .update(file)
        .update('\0')
        .update(readFileSync(join(ROOT, file)))
        .update('\0');
    const cache = join(ROOT, 'node_modules', '.cache', 'bullmq-tool-receipts-tests');
    const out = join(cache, digest.digest('hex').slice(0, 20));
    if (!existsSync(join(out, 'package.json'))) {
      const partial = `${out}.${process.pid}.${Date.now()}`;
      build(files, partial);
      try {
        renameSync(partial, out);
      } catch {
        // Another test process finished the same tree first: use that one.
        rmSync(partial, { recursive: true, force: true });
      }
    }
    built = out;
    forgetOldTrees(cache, out);
  } catch {
    built = null;
  }
  return built;
}

/** The transpiled JavaScript of the TypeScript file `path` (absolute, or relative to the repository), or `null` when there is none. */
function compiledFile(path: string): string | null {
  const inRepo = relative(ROOT, resolve(ROOT, path));
  const root = inRepo.startsWith('..') ? null : compiledRoot();
  return root === null ? null : join(root, inRepo.replace(/\.ts$/, '.js'));
}

/**
 * How to start the TypeScript file `script` (absolute, or relative to the
 * repository) with Node: its transpiled JavaScript and no loader, or, when
 * that cannot be built, the file itself under tsx.
 */
export function runnableScript(script: string): { readonly script: string; readonly execArgv: readonly string[] } {
  const compiled = compiledFile(script);
  return compiled === null ? { script: resolve(ROOT, script), execArgv: ['--import', 'tsx'] } : { script: compiled, execArgv: [] };
}

/** The module a process started by {@link runnableScript} imports for the TypeScript file `path`: the same tree's. */
export function runnableModule(path: string): string {
  return compiledFile(path) ?? resolve(ROOT, path);
}
