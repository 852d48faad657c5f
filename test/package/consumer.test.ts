/**
 * The package as a user installs it: built and packed, then installed into two
 * scratch apps next to their own bullmq, ioredis and zod (the newest of bullmq
 * 6 + ioredis 6, and of bullmq 5 + ioredis 5, each with zod 4). Each app
 * typechecks a worker written like the README's "Use" section (strict,
 * NodeNext; the bullmq 6 app also every TypeScript block of the README), runs
 * one real job through a real Worker (executed, then replayed), and loads
 * every entry with require().
 */
import { readdir, readFile, rm } from 'node:fs/promises';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRedis, type RedisHandle } from '../support/redis.js';
import { buildAndPack, readmeBlocks, repoRoot, resultOf, scratchApp, type Ran, type ScratchApp } from './scratch-app.js';

const APPS = {
  'bullmq 6 + ioredis 6': { bullmq: '^6', ioredis: '^6', zod: '^4' },
  'bullmq 5 + ioredis 5': { bullmq: '^5', ioredis: '^5', zod: '^4' },
} as const;
type AppName = keyof typeof APPS;
const README_APP: AppName = 'bullmq 6 + ioredis 6';

/**
 * What the README's OpenTelemetry block imports besides the package, at the
 * versions this repo tests with. bullmq-otel needs bullmq 6, so the README
 * blocks are compiled in the bullmq 6 app; the other gets only the optional
 * peer `@opentelemetry/api`, so its `/otel` entry loads.
 */
async function extrasFor(name: AppName): Promise<Record<string, string>> {
  const { devDependencies } = JSON.parse(await readFile(path.join(repoRoot, 'package.json'), 'utf8')) as { devDependencies: Record<string, string> };
  const wanted = name === README_APP ? Object.keys(devDependencies).filter((dep) => dep.startsWith('@opentelemetry/') || dep === 'bullmq-otel') : ['@opentelemetry/api'];
  return Object.fromEntries(wanted.map((dep) => [dep, devDependencies[dep]!]));
}

interface AppOutcome {
  readonly app: ScratchApp;
  readonly typecheck: Ran;
  readonly worker: Ran;
  readonly required: Ran;
}

let redis: RedisHandle;
let scratch: string;
let packed: { tarball: string; files: string[] };
const outcomes = new Map<AppName, AppOutcome>();

/**
 * Installs, typechecks, and runs both scripts of one app (the two apps go at
 * once); each script gets its own key prefix, so neither can replay the other's call.
 */
async function exercise(name: AppName, index: number, readmeSources: Record<string, string>): Promise<AppOutcome> {
  const sources = name === README_APP ? readmeSources : {};
  const app = await scratchApp(`app${index}`, packed.tarball, { ...APPS[name], ...(await extrasFor(name)) }, sources);
  const typecheck = await app.typecheck();
  const env = { REDIS_URL: redis.url };
  const worker = typecheck.code === 0 ? await app.node('out/use.js', { ...env, RECEIPTS_PREFIX: `${redis.prefix}esm${index}` }) : typecheck;
  const required = await app.node('require.cjs', { ...env, RECEIPTS_PREFIX: `${redis.prefix}cjs${index}` });
  return { app, typecheck, worker, required };
}

beforeAll(async () => {
  redis = await startRedis();
  scratch = await mkdtemp(path.join(tmpdir(), 'trc-pack-'));
  packed = await buildAndPack(scratch);
  const readmeSources = readmeBlocks(await readFile(path.join(repoRoot, 'README.md'), 'utf8'));
  const names = Object.keys(APPS) as AppName[];
  const done = await Promise.all(names.map((name, i) => exercise(name, i, readmeSources)));
  names.forEach((name, i) => outcomes.set(name, done[i]!));
}, 300_000);

afterAll(async () => {
  await redis?.stop();
  const dirs = [scratch, ...[...outcomes.values()].map((o) => o.app.dir)].filter((d) => d !== undefined);
  await Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true })));
});

describe('the packed tarball', () => {
  it('holds the built code, the Lua scripts, the docs and the licence, and nothing else', async () => {
    const { files } = packed;
    const lua = (await readdir(path.join(repoRoot, 'lua'), { recursive: true }))
      .filter((f) => f.endsWith('.lua'))
      .map((f) => `lua/${f.split(path.sep).join('/')}`);
    expect(lua.length).toBeGreaterThan(10);
    for (const file of [...lua, 'LICENSE', 'README.md', 'package.json', 'docs/offload.md', 'docs/console.md', 'dist/cli/main.js', 'dist/console/index.js']) {
      expect(files).toContain(file);
    }
    expect(files.filter((f) => f.endsWith('.map'))).toEqual([]);
    expect(files.filter((f) => !/^(dist\/.*\.(js|d\.ts)|lua\/.*\.lua|docs\/.*\.md|docs\/console\/[a-z-]+-1280\.png|LICENSE|README\.md|package\.json)$/.test(f))).toEqual([]);
    // The screenshots docs/console.md shows, and no other.
    expect(files.filter((f) => f.endsWith('.png')).sort()).toEqual(
      ['bulk-done', 'needs-a-person', 'run', 'stale-resolve'].map((page) => `docs/console/${page}-1280.png`),
    );
  });

  it('has every file its exports map, main, types and bin name', async () => {
    const manifest = JSON.parse(await readFile(path.join(repoRoot, 'package.json'), 'utf8')) as {
      exports: Record<string, string | Record<string, string>>;
      main: string;
      types: string;
      bin: Record<string, string>;
    };
    const targets = Object.values(manifest.exports).flatMap((entry) => (typeof entry === 'string' ? [entry] : Object.values(entry)));
    targets.push(manifest.main, manifest.types, ...Object.values(manifest.bin));
    for (const target of targets) expect(packed.files).toContain(target.replace(/^\.\//, ''));
    for (const [subpath, entry] of Object.entries(manifest.exports)) {
      if (typeof entry === 'string') continue;
      expect(Object.keys(entry), subpath).toEqual(['types', 'import', 'default']);
    }
  });

  it('has a file for every relative link of its README', async () => {
    const readme = await readFile(path.join(repoRoot, 'README.md'), 'utf8');
    const links = [...readme.matchAll(/\]\(([^)#]+)(#[^)]*)?\)/g)].map((m) => m[1]!).filter((l) => !/^[a-z]+:/.test(l));
    expect(links.length).toBeGreaterThan(0);
    for (const link of links) {
      const target = link.replace(/^\.\//, '').replace(/\/$/, '');
      expect(packed.files.some((f) => f === target || f.startsWith(`${target}/`)), link).toBe(true);
    }
  });
});

describe.each(Object.entries(APPS) as [AppName, (typeof APPS)[AppName]][])('a scratch app on %s', (name, wanted) => {
  const outcome = () => outcomes.get(name)!;

  it('has the newest of each major it asked for, and one copy each of bullmq, ioredis and zod', async () => {
    for (const [dep, range] of Object.entries(wanted)) {
      const installed = JSON.parse(await readFile(path.join(outcome().app.dir, 'node_modules', dep, 'package.json'), 'utf8')) as { version: string };
      expect(installed.version.split('.')[0], dep).toBe(range.slice(1));
    }
    const copies = await outcome().app.copiesOf(['bullmq', 'ioredis', 'zod', 'bullmq-tool-receipts']);
    for (const [dep, dirs] of Object.entries(copies)) expect(dirs, `copies of ${dep}`).toHaveLength(1);
  });

  it(`typechecks the worker${name === README_APP ? ' and every README TypeScript block' : ''} (strict, NodeNext)`, () => {
    expect(outcome().typecheck.stdout + outcome().typecheck.stderr).toBe('');
    expect(outcome().typecheck.code).toBe(0);
  });

  it('runs a call through a real Worker: executed, then replayed by the second job', () => {
    const { worker } = outcome();
    expect(worker.code, worker.stderr).toBe(0);
    expect(resultOf(worker)).toEqual({
      outcomes: ['executed', 'replayed'],
      sent: ['ada@example.com'],
      completed: 1,
      note: 'string',
      entries: { offload: 'function', repair: 'function', testing: ['function', 'function'] },
      consolePage: { status: 200, listsTheCall: true },
      clusterShaped: true,
    });
  });

  it('loads every entry with require() and runs a call on the real Redis from CommonJS', () => {
    const { required } = outcome();
    expect(required.code, required.stderr).toBe(0);
    const result = resultOf(required) as { outcomes: string[]; sent: string[]; refused: string; exported: Record<string, number> };
    expect(result.outcomes).toEqual(['executed', 'replayed']);
    expect(result.sent).toEqual(['printer']);
    expect(result.refused).toBe('digest.invalid_secret');
    expect(Object.keys(result.exported)).toEqual(expect.arrayContaining(['core', 'redis', 'offload', 'repair', 'testing']));
    for (const [entry, count] of Object.entries(result.exported)) expect(count, entry).toBeGreaterThan(1);
  });
});
