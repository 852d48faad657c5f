/**
 * The package as its users run it: the build in `dist/` (what `npm run
 * bench` builds first), not the TypeScript sources through tsx, whose
 * transform adds work of its own to every function the wrapper creates per
 * call. The peer is measured as installed, so ours is too. Types come from
 * the sources, which the build is made from.
 */
import { existsSync, statSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

type RootEntry = typeof import('../src/index.js');
type OtelEntry = typeof import('../src/otel/index.js');
type TransactionalEntry = typeof import('../src/transactional/index.js');

const entry = (path: string): string => {
  const file = fileURLToPath(new URL(path, import.meta.url));
  if (!existsSync(file)) throw new Error(`bench: ${path} is missing; run \`npm run build\` first (\`npm run bench\` does)`);
  return file;
};

const root = entry('../dist/index.js');
/** The root entry of the build. */
export const built: RootEntry = await import(root);
/** The `/otel` entry of the build. */
export const builtOtel: OtelEntry = await import(entry('../dist/otel/index.js'));
/** The `/transactional` entry of the build. */
export const builtTransactional: TransactionalEntry = await import(entry('../dist/transactional/index.js'));
/** When the build was made, for the report: a stale build measures old code. */
export const builtAt: Date = statSync(root).mtime;
