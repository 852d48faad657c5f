/**
 * The package as a user installs it: built and packed, then installed into two
 * scratch apps next to their own bullmq, ioredis and zod (the newest of bullmq
 * 6 + ioredis 6, and of bullmq 5 + ioredis 5, each with zod 4). Each app
 * typechecks a worker and the front page's worker + producer
 * (examples/quickstart.ts; strict with exactOptionalPropertyTypes, NodeNext;
 * the bullmq 6 app also every TypeScript block of README.md and
 * docs/*.md), runs one real job through a
 * real Worker (executed, then replayed), runs the quick start end to end, and
 * loads every entry with require(). A third app has bullmq 6 and node-redis 6
 * and no ioredis at all: it typechecks and runs a worker whose receipts and
 * queue both go through node-redis clients. No app installs the agent
 * frameworks (they would double the test's time on a two-core machine): in
 * each, as for a user without any, every entry but the four framework
 * subpaths loads, and those fail as missing modules. docs/frameworks.md's
 * blocks are the examples/framework-*.ts files byte for byte (test/docs
 * checks it), which the repo's own typecheck compiles, and
 * test/frameworks runs against each framework.
 */
import { readdir, readFile, rm } from 'node:fs/promises';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRedis, type RedisHandle } from '../support/redis.js';
import {
  buildAndPack,
  markdownBlocks,
  repoRoot,
  resultOf,
  scratchApp,
  type Ran,
  type ScratchApp,
  type Typechecked,
} from './scratch-app.js';

const APPS = {
  'bullmq 6 + ioredis 6': { bullmq: '^6', ioredis: '^6', zod: '^4' },
  'bullmq 5 + ioredis 5': { bullmq: '^5', ioredis: '^5', zod: '^4' },
} as const;
type AppName = keyof typeof APPS;
const README_APP: AppName = 'bullmq 6 + ioredis 6';
/** The framework subpaths: each needs its agent framework, an optional peer no scratch app installs. */
const FRAMEWORK_ENTRIES = ['ai-sdk', 'openai-agents', 'mastra', 'langgraph'];
/** The app without ioredis: receipts and queue on node-redis. */
const NODE_REDIS_APP = { bullmq: '^6', redis: '^6', zod: '^4' } as const;

/**
 * What the README's OpenTelemetry block imports besides the package, at the
 * versions this repo tests with. bullmq-otel needs bullmq 6, so the README
 * blocks are compiled in the bullmq 6 app; the other gets only the optional
 * peer `@opentelemetry/api`, so its `/otel` entry loads.
 */
async function extrasFor(name: AppName): Promise<Record<string, string>> {
  const { devDependencies } = JSON.parse(await readFile(path.join(repoRoot, 'package.json'), 'utf8')) as {
    devDependencies: Record<string, string>;
  };
  const wanted =
    name === README_APP
      ? Object.keys(devDependencies).filter((dep) => dep.startsWith('@opentelemetry/') || dep === 'bullmq-otel')
      : ['@opentelemetry/api'];
  // The optional MCP peer, in both apps, so their `/mcp` entry loads too (require.cjs loads every subpath).
  wanted.push('@modelcontextprotocol/sdk');
  // docs/redis.md's node-redis block imports `redis`; docs/transactional.md's blocks import the PostgreSQL drivers.
  // `@types/redis-errors` is what docs/redis.md tells a strict-typing user of ioredis 6.1 to add.
  if (name === README_APP) wanted.push('redis', 'pg', '@types/pg', 'drizzle-orm', 'kysely', '@types/redis-errors');
  return Object.fromEntries(wanted.map((dep) => [dep, devDependencies[dep]!]));
}

interface AppOutcome {
  readonly app: ScratchApp;
  readonly typecheck: Typechecked;
  readonly worker: Ran;
  readonly required: Ran;
  /** The quick start, or `undefined` when it could not get a database of its own. */
  readonly quickstart: Ran | undefined;
}

/** README.md and every docs/*.md, by repo-relative name. */
async function docPages(): Promise<Record<string, string>> {
  const docs = (await readdir(path.join(repoRoot, 'docs'))).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`);
  const names = ['README.md', ...docs];
  return Object.fromEntries(
    await Promise.all(names.map(async (name) => [name, await readFile(path.join(repoRoot, name), 'utf8')] as const)),
  );
}

let redis: RedisHandle;
let scratch: string;
let packed: { tarball: string; files: string[] };
const outcomes = new Map<AppName, AppOutcome>();
let nodeRedisOutcome: { app: ScratchApp; typecheck: Typechecked; worker: Ran } | undefined;

/**
 * Says in the test's output which versions an app got (its ranges pin no
 * minor) and any errors tsc found inside those peers' own declarations,
 * which are theirs to fix and do not fail the app.
 */
async function report(label: string, app: ScratchApp, dependencies: Record<string, string>, typecheck: Typechecked): Promise<void> {
  const versions = await app.versionsOf(Object.keys(dependencies));
  console.log(
    `[consumer] ${label}: ${Object.entries(versions)
      .map(([dep, version]) => `${dep}@${version}`)
      .join(', ')}`,
  );
  if (typecheck.peerErrors.length > 0) {
    console.warn(`[consumer] ${label}: errors in peers' own declarations, reported and not failed on:\n${typecheck.peerErrors.join('\n')}`);
  }
}

async function exerciseNodeRedis(): Promise<{ app: ScratchApp; typecheck: Typechecked; worker: Ran }> {
  const app = await scratchApp('app-node-redis', packed.tarball, { ...NODE_REDIS_APP }, {}, 'node-redis');
  const typecheck = await app.typecheck();
  await report('bullmq 6 + node-redis 6', app, NODE_REDIS_APP, typecheck);
  const worker =
    typecheck.code === 0 ? await app.node('out/use.js', { REDIS_URL: redis.url, RECEIPTS_PREFIX: `${redis.prefix}nr` }) : typecheck;
  return { app, typecheck, worker };
}

/**
 * Installs, typechecks, and runs both scripts of one app (the two apps go at
 * once); each script gets its own key prefix, so neither can replay the other's call.
 */
async function exercise(name: AppName, index: number, docSources: Record<string, string>): Promise<AppOutcome> {
  const sources = name === README_APP ? docSources : {};
  const dependencies = { ...APPS[name], ...(await extrasFor(name)) };
  const app = await scratchApp(`app${index}`, packed.tarball, dependencies, sources);
  const typecheck = await app.typecheck();
  await report(name, app, dependencies, typecheck);
  const env = { REDIS_URL: redis.url };
  const worker = typecheck.code === 0 ? await app.node('out/use.js', { ...env, RECEIPTS_PREFIX: `${redis.prefix}esm${index}` }) : typecheck;
  const required = await app.node('require.cjs', { ...env, RECEIPTS_PREFIX: `${redis.prefix}cjs${index}` });
  // The quick start uses the names a new app would (queue tool-calls, prefix trc): each app gets a database of its own.
  const quickstart =
    typecheck.code !== 0
      ? typecheck
      : redis.controllable
        ? await app.node('out/quickstart.js', { REDIS_URL: `${redis.url}/${index + 1}` })
        : undefined;
  return { app, typecheck, worker, required, quickstart };
}

beforeAll(async () => {
  redis = await startRedis();
  scratch = await mkdtemp(path.join(tmpdir(), 'trc-pack-'));
  packed = await buildAndPack(scratch);
  // The framework examples' blocks need the frameworks, which no app installs (see the top of this file).
  const docSources = Object.fromEntries(
    Object.entries(markdownBlocks(await docPages())).filter(([, code]) => !/from '(ai|@openai\/agents|@mastra\/|@langchain\/)/.test(code)),
  );
  const names = Object.keys(APPS) as AppName[];
  const [done, nodeRedis] = await Promise.all([Promise.all(names.map((name, i) => exercise(name, i, docSources))), exerciseNodeRedis()]);
  names.forEach((name, i) => outcomes.set(name, done[i]!));
  nodeRedisOutcome = nodeRedis;
}, 600_000);

afterAll(async () => {
  await redis?.stop();
  const dirs = [scratch, ...[...outcomes.values(), ...(nodeRedisOutcome ? [nodeRedisOutcome] : [])].map((o) => o.app.dir)].filter(
    (d) => d !== undefined,
  );
  await Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true })));
});

describe('the packed tarball', () => {
  it('holds the built code, the Lua scripts, the docs, the examples they show, the compose file and the licence, and nothing else', async () => {
    const { files } = packed;
    const lua = (await readdir(path.join(repoRoot, 'lua'), { recursive: true }))
      .filter((f) => f.endsWith('.lua'))
      .map((f) => `lua/${f.split(path.sep).join('/')}`);
    expect(lua.length).toBeGreaterThan(10);
    const docs = Object.keys(await docPages());
    expect(docs.length).toBeGreaterThan(10);
    const shipped = [
      'LICENSE',
      'package.json',
      'dist/cli/main.js',
      'dist/console/index.js',
      'examples/quickstart.ts',
      'examples/testing-a-processor.ts',
      'examples/mcp/mail-server.ts',
      'examples/mcp/worker.ts',
      'docker-compose.yml',
    ];
    for (const file of [...lua, ...docs, ...shipped]) {
      expect(files).toContain(file);
    }
    expect(files.filter((f) => f.endsWith('.map'))).toEqual([]);
    expect(
      files.filter(
        (f) =>
          !/^(dist\/.*\.(js|d\.ts)|lua\/.*\.lua|docs\/.*\.md|docs\/console\/[a-z-]+-1280\.png|LICENSE|README\.md|package\.json)$/.test(f) &&
          !shipped.includes(f),
      ),
    ).toEqual([]);
    // The screenshots docs/console.md shows, and no other.
    expect(files.filter((f) => f.endsWith('.png')).sort()).toEqual(
      ['bulk-done', 'needs-a-person', 'needs-approval', 'run', 'stale-resolve'].map((page) => `docs/console/${page}-1280.png`),
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

  it('has a file for every relative link of its README and docs', async () => {
    let checked = 0;
    for (const [page, text] of Object.entries(await docPages())) {
      const links = [...text.matchAll(/\]\(([^)#\s]+)(#[^)]*)?\)/g)].map((m) => m[1]!).filter((l) => !/^[a-z]+:/.test(l));
      for (const link of links) {
        const target = path.posix.normalize(path.posix.join(path.posix.dirname(page), link)).replace(/\/$/, '');
        expect(
          packed.files.some((f) => f === target || f.startsWith(`${target}/`)),
          `${page}: ${link}`,
        ).toBe(true);
        checked += 1;
      }
    }
    expect(checked).toBeGreaterThan(60);
  });
});

describe.each(Object.entries(APPS) as [AppName, (typeof APPS)[AppName]][])('a scratch app on %s', (name, wanted) => {
  const outcome = () => outcomes.get(name)!;

  it('has the newest of each major it asked for, and one copy each of bullmq, ioredis and zod', async () => {
    for (const [dep, range] of Object.entries(wanted)) {
      const installed = JSON.parse(await readFile(path.join(outcome().app.dir, 'node_modules', dep, 'package.json'), 'utf8')) as {
        version: string;
      };
      expect(installed.version.split('.')[0], dep).toBe(range.slice(1));
    }
    const copies = await outcome().app.copiesOf(['bullmq', 'ioredis', 'zod', 'bullmq-tool-receipts']);
    for (const [dep, dirs] of Object.entries(copies)) expect(dirs, `copies of ${dep}`).toHaveLength(1);
  });

  it(`typechecks the worker, the quick start${name === README_APP ? ' and every TypeScript block of README.md and docs/' : ''} (strict, exactOptionalPropertyTypes, NodeNext)`, () => {
    expect(outcome().typecheck.stdout + outcome().typecheck.stderr).toBe('');
    expect(outcome().typecheck.code).toBe(0);
  });

  if (name === README_APP) {
    it("needs nothing beyond docs/redis.md's advice for ioredis 6's declarations under skipLibCheck: false", () => {
      expect(outcome().typecheck.peerErrors.filter((error) => error.includes('redis-errors'))).toEqual([]);
    });
  }

  it('runs a call through a real Worker: executed, then replayed by the second job', () => {
    const { worker } = outcome();
    expect(worker.code, worker.stderr).toBe(0);
    expect(resultOf(worker)).toEqual({
      outcomes: ['executed', 'replayed'],
      sent: ['ada@example.com'],
      completed: 1,
      note: 'string',
      entries: {
        offload: 'function',
        repair: 'function',
        testing: ['function', 'function'],
        mcp: ['function', 'function', 'bullmq-tool-receipts/idempotency-key'],
      },
      consolePage: { status: 200, listsTheCall: true },
      clusterShaped: true,
    });
  });

  it("runs the front page's worker + producer as written: executed once, replayed for the redelivered turn, and it exits", (ctx) => {
    const { quickstart } = outcome();
    if (quickstart === undefined) ctx.skip('the quick start needs a throwaway Redis (REDIS_URL is set)');
    expect(quickstart!.code, quickstart!.stdout + quickstart!.stderr).toBe(0);
    expect(quickstart!.stdout.match(/^sending "Your invoice" to ada@example\.com/gm)).toHaveLength(1);
    expect(quickstart!.stdout).toMatch(/^first executed \{"sent":true\}$/m);
    expect(quickstart!.stdout).toMatch(/^redelivered replayed \{"sent":true\}$/m);
  });

  it('loads every entry with require() and runs a call on the real Redis from CommonJS', () => {
    const { required } = outcome();
    expect(required.code, required.stderr).toBe(0);
    const result = resultOf(required) as {
      outcomes: string[];
      sent: string[];
      refused: string;
      exported: Record<string, number>;
      absent: Record<string, string>;
    };
    expect(result.outcomes).toEqual(['executed', 'replayed']);
    // Without the frameworks each framework subpath fails as a missing module, and every other entry loads.
    expect(result.absent).toEqual(Object.fromEntries(FRAMEWORK_ENTRIES.map((entry) => [entry, 'ERR_MODULE_NOT_FOUND'])));
    expect(result.sent).toEqual(['printer']);
    expect(result.refused).toBe('digest.invalid_secret');
    expect(Object.keys(result.exported)).toEqual(expect.arrayContaining(['core', 'redis', 'offload', 'repair', 'testing']));
    for (const [entry, count] of Object.entries(result.exported)) expect(count, entry).toBeGreaterThan(1);
  });
});

describe('a scratch app on bullmq 6 + node-redis 6, without ioredis', () => {
  const outcome = () => nodeRedisOutcome!;

  it('has bullmq 6, node-redis 6 and zod, and no ioredis anywhere', async () => {
    for (const [dep, range] of Object.entries(NODE_REDIS_APP)) {
      const installed = JSON.parse(await readFile(path.join(outcome().app.dir, 'node_modules', dep, 'package.json'), 'utf8')) as {
        version: string;
      };
      expect(installed.version.split('.')[0], dep).toBe(range.slice(1));
    }
    const copies = await outcome().app.copiesOf(['ioredis', 'redis', 'bullmq', 'bullmq-tool-receipts']);
    expect(copies['ioredis']).toEqual([]);
    for (const dep of ['redis', 'bullmq', 'bullmq-tool-receipts']) expect(copies[dep], `copies of ${dep}`).toHaveLength(1);
  });

  it('typechecks a worker with a node-redis client for the receipts (strict, exactOptionalPropertyTypes, NodeNext)', () => {
    expect(outcome().typecheck.stdout + outcome().typecheck.stderr).toBe('');
    expect(outcome().typecheck.code).toBe(0);
  });

  it('runs a call through a real Worker on node-redis: executed, then replayed by the second job', () => {
    const { worker } = outcome();
    expect(worker.code, worker.stderr).toBe(0);
    expect(resultOf(worker)).toEqual({ outcomes: ['executed', 'replayed'], sent: ['ada@example.com'], receipts: ['completed'] });
  });
});
