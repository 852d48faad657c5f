/**
 * What one wrapped job costs Node at c=1, against the peer's: JavaScript
 * heap bytes allocated per job, garbage collections and their time per job,
 * and CPU µs per job (`npm run bench:alloc`).
 *
 * Fresh one-call jobs (real BullMQ Job objects, never enqueued) go through
 * the processor one after another, as bench/ab.ts runs them: ours
 * (`withToolReceipts` of the build, bench/package.ts: `npm run build` first,
 * as `npm run bench` does), the peer's (Powertools' `makeIdempotent`,
 * bench/peer.ts), and a control (the claim and the complete alone, on the
 * wrapper's own store, keyed by a digest worked out before the pass: what
 * the receipt's two round trips cost, so ours − control is the wrapper's
 * own work), on one throwaway Redis, rounds alternating the sides.
 * It runs itself twice, in child processes: once with the young generation
 * made large enough that no collection runs (`--min-semi-space-size`), so the
 * heap's growth over a pass is what its jobs allocated (a pass where a
 * collection ran anyway is dropped, and said so), and once with Node's
 * default heap, timing CPU and collections (PerformanceObserver 'gc'
 * entries). Tunables: ALLOC_JOBS (default 500 per pass), ALLOC_ROUNDS
 * (default 6); ALLOC_SITES=1 adds a third run, a sampling heap profile of
 * our jobs, printing where they allocate (by package, then the top sites;
 * ALLOC_TOP sites, default 15, sampled every ALLOC_INTERVAL bytes, default 512).
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { Session } from 'node:inspector';
import { PerformanceObserver } from 'node:perf_hooks';
import { Job, Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { z } from 'zod';
import type { ToolJobData } from '../src/bullmq/job-data.js';
import { startRedis } from '../test/support/redis.js';
import { built } from './package.js';
import { peerIdempotent, peerProcessor } from './peer.js';
import { median, realisticResult } from './support.js';

const JOBS = Number(process.env['ALLOC_JOBS'] ?? 500);
const MODE = process.env['ALLOC_MODE'];
const ROUNDS = Number(process.env['ALLOC_ROUNDS'] ?? 6);
/** How many allocation sites ALLOC_SITES=1 prints (ALLOC_TOP, default 15). */
const TOP_SITES = Number(process.env['ALLOC_TOP'] ?? 15);
/** The sampling heap profile's mean interval in bytes (ALLOC_INTERVAL, default 512). */
const SAMPLING_BYTES = Number(process.env['ALLOC_INTERVAL'] ?? 512);
const gc = (globalThis as { gc?: () => void }).gc;

interface Side {
  readonly name: string;
  readonly run: (job: Job<ToolJobData>) => Promise<unknown>;
  readonly bytes: number[];
  readonly collected: number[];
  readonly gcCount: number[];
  readonly gcMs: number[];
  readonly cpu: number[];
}

/** A V8 sampling heap profile node (HeapProfiler.SamplingHeapProfileNode), as much of it as is read here. */
interface ProfileNode {
  readonly callFrame: { readonly functionName: string; readonly url: string; readonly lineNumber: number };
  readonly selfSize: number;
  readonly children: readonly ProfileNode[];
}

/** Where `side`'s jobs allocate: V8's sampling heap profiler over them, collected objects included, top sites by bytes per job. */
async function printAllocationSites(side: Side, jobs: readonly Job<ToolJobData>[]): Promise<void> {
  const session = new Session();
  session.connect();
  const post = (method: string, params?: object) =>
    new Promise<unknown>((resolve, reject) => session.post(method, params ?? {}, (err, result) => (err ? reject(err) : resolve(result))));
  await post('HeapProfiler.startSampling', {
    samplingInterval: SAMPLING_BYTES,
    includeObjectsCollectedByMajorGC: true,
    includeObjectsCollectedByMinorGC: true,
  });
  for (const job of jobs) await side.run(job);
  const { profile } = (await post('HeapProfiler.stopSampling')) as { profile: { head: ProfileNode } };
  session.disconnect();
  const bySite = new Map<string, number>();
  const byPlace = new Map<string, number>();
  const walk = (node: ProfileNode) => {
    const { functionName, url, lineNumber } = node.callFrame;
    const file = url.replace(/^.*\/node_modules\//, '').replace(/^file:\/\/.*?\/(dist|bench|test)\//, '$1/');
    const site = `${functionName || '(anonymous)'} ${file}${lineNumber > 0 ? `:${lineNumber + 1}` : ''}`;
    bySite.set(site, (bySite.get(site) ?? 0) + node.selfSize);
    const place = file.startsWith('dist/') ? 'this package (dist/)' : file === '' ? '(V8 and Node internals)' : file.split('/')[0]!;
    byPlace.set(place, (byPlace.get(place) ?? 0) + node.selfSize);
    for (const child of node.children) walk(child);
  };
  walk(profile.head);
  const perJob = (bytes: number) => `${(bytes / jobs.length / 1024).toFixed(1).padStart(5)} KiB`;
  console.log(
    `allocation sites of ${side.name} — ${jobs.length} jobs, sampling heap profile (every ${SAMPLING_BYTES} bytes, collected objects included)`,
  );
  console.log('  by package:');
  for (const [place, bytes] of [...byPlace].sort((x, y) => y[1] - x[1]).slice(0, 8)) console.log(`    ${perJob(bytes)}  ${place}`);
  console.log('  top sites:');
  for (const [site, bytes] of [...bySite].sort((x, y) => y[1] - x[1]).slice(0, TOP_SITES)) console.log(`    ${perJob(bytes)}  ${site}`);
}

async function main(collect: () => void): Promise<void> {
  const handle = await startRedis();
  const queueConnection = new Redis(handle.url, { maxRetriesPerRequest: null, lazyConnect: true });
  const queue = new Queue('alloc', { connection: queueConnection, prefix: `${handle.prefix}:bull` });
  const ours = new Redis(handle.url, { maxRetriesPerRequest: null });
  const theirs = new Redis(handle.url, { maxRetriesPerRequest: null });
  try {
    const tool = built.defineTool({
      name: 'send_email',
      input: z.object({ to: z.string(), n: z.number().int() }),
      effect: 'opaque',
      destructive: false,
      execute: ({ n }) => realisticResult(n),
    });
    const wrapped = built.withToolReceipts({
      redis: ours,
      tools: [tool],
      prefix: `${handle.prefix}:rcpt`,
      logger: pino({ level: 'silent' }),
    });
    const peerCall = peerIdempotent(theirs, `${handle.prefix}:peer`, { retentionSeconds: 86_400, leaseMs: 30_000 }, (call) =>
      realisticResult((call.input as { n: number }).n),
    );
    const peer = peerProcessor(peerCall);
    const sides: Side[] = [
      {
        name: 'ours',
        run: (job) => wrapped(job, undefined, new AbortController().signal),
        bytes: [],
        collected: [],
        gcCount: [],
        gcMs: [],
        cpu: [],
      },
      { name: 'peer', run: (job) => peer(job), bytes: [], collected: [], gcCount: [], gcMs: [], cpu: [] },
      { name: 'control', run: (job) => control(job), bytes: [], collected: [], gcCount: [], gcMs: [], cpu: [] },
    ];
    // The control's receipt keys: a digest per call, as long as the wrapper's, worked out before its pass.
    const digests = new Map<string, string>();
    const control = async (job: Job<ToolJobData>) => {
      const { tenantId, runId, calls } = job.data;
      const results = [];
      for (const call of calls) {
        const key = { tenantId, runId, toolName: call.name, argsHash: digests.get(call.id)! };
        const claim = await wrapped.store.claim(key, { effect: 'opaque' });
        if (claim.fence === undefined) throw new Error(`control pass: ${call.id} got ${claim.decision.kind}`);
        const content = JSON.stringify(realisticResult((call.input as { n: number }).n));
        await wrapped.store.complete(key, claim.fence, { content });
        results.push({ type: 'tool_result' as const, tool_use_id: call.id, content, outcome: 'executed' as const });
      }
      return { results };
    };
    const jobsFor = (tag: string) =>
      Array.from({ length: JOBS }, (_, i) => {
        const id = `toolu_${tag}_${i}`;
        digests.set(id, createHash('sha256').update(id).digest('hex'));
        const data: ToolJobData = {
          tenantId: 'alloc',
          runId: `run-${tag}-${i % 100}`,
          calls: [{ id, name: 'send_email', input: { to: 'user@example.com', n: i } }],
        };
        return new Job(queue, 'call', data, { attempts: 1 }, `${tag}-${i}`);
      });
    let gcEntries: { count: number; ms: number } = { count: 0, ms: 0 };
    const observer = new PerformanceObserver((list) => {
      for (const entry of list.getEntries()) {
        gcEntries.count++;
        gcEntries.ms += entry.duration;
      }
    });
    observer.observe({ entryTypes: ['gc'] });
    const settle = () => new Promise((r) => setTimeout(r, 20));
    const pass = async (side: Side, tag: string, record: boolean) => {
      const jobs = jobsFor(tag);
      // Collected first: the allocation pass then expects no collection at all.
      collect();
      await settle();
      gcEntries = { count: 0, ms: 0 };
      const heapBefore = process.memoryUsage().heapUsed;
      const cpuBefore = process.cpuUsage();
      for (const job of jobs) await side.run(job);
      const cpu = process.cpuUsage(cpuBefore);
      const grown = process.memoryUsage().heapUsed - heapBefore;
      await settle();
      if (!record) return;
      if (MODE === 'bytes') {
        const quiet = gcEntries.count === 0;
        if (quiet) side.bytes.push(grown / JOBS);
        side.collected.push(quiet ? 0 : 1);
      } else {
        side.cpu.push((cpu.user + cpu.system) / JOBS);
        side.gcCount.push(gcEntries.count / JOBS);
        side.gcMs.push((gcEntries.ms * 1000) / JOBS);
      }
    };
    for (const side of sides) await pass(side, `warm-${side.name}`, false);
    if (MODE === 'sites') {
      await printAllocationSites(sides[0]!, jobsFor('sites'));
      return;
    }
    for (let r = 0; r < ROUNDS; r++) {
      const order = r % 2 === 0 ? sides : [...sides].reverse();
      for (const side of order) await pass(side, `r${r}-${side.name}`, true);
    }
    observer.disconnect();
    const [a, b, c] = sides as [Side, Side, Side];
    const ratio = (x: number[], y: number[]) => x.map((v, r) => v / (y[r] ?? v));
    const rounds = `${JOBS} fresh one-call jobs per pass, one after another, results of ${JSON.stringify(realisticResult(42)).length} bytes; ${ROUNDS} rounds alternating, medians`;
    if (MODE === 'bytes') {
      console.log(`allocations bench — node ${process.versions.node}, young generation large enough for a pass; ${rounds}`);
      for (const side of sides) {
        const dropped = side.collected.reduce((n, collected) => n + collected, 0);
        console.log(
          `  ${side.name.padEnd(7)} heap allocated per job ${(median(side.bytes) / 1024).toFixed(1).padStart(6)} KiB` +
            (dropped > 0 ? ` (${dropped} of ${ROUNDS} passes dropped: a collection ran)` : ''),
        );
      }
      if (a.bytes.length > 0 && b.bytes.length > 0 && c.bytes.length > 0) {
        console.log(
          `  ours / peer allocated ${(median(a.bytes) / median(b.bytes)).toFixed(2)}×; control / peer ${(median(c.bytes) / median(b.bytes)).toFixed(2)}×`,
        );
        console.log(`  the wrapper's own work (ours − control) ${((median(a.bytes) - median(c.bytes)) / 1024).toFixed(1)} KiB per job`);
      }
    } else {
      console.log(`allocations bench — node ${process.versions.node}, default heap; ${rounds}`);
      for (const side of sides) {
        console.log(
          `  ${side.name.padEnd(7)} CPU per job ${median(side.cpu).toFixed(0).padStart(4)} µs; collections per 1,000 jobs ` +
            `${(median(side.gcCount) * 1000).toFixed(1)}, their time ${median(side.gcMs).toFixed(1)} µs per job`,
        );
      }
      const cpu = ratio(a.cpu, b.cpu);
      console.log(
        `  ours / peer CPU per job ${median(cpu).toFixed(2)}× (min ${Math.min(...cpu).toFixed(2)}, max ${Math.max(...cpu).toFixed(2)}; goal ≤ 1.3×)`,
      );
      console.log(
        `  ours / control CPU per job ${median(ratio(a.cpu, c.cpu)).toFixed(2)}× (the wrapper's own work on top of the two round trips)`,
      );
    }
  } finally {
    ours.disconnect();
    theirs.disconnect();
    queueConnection.disconnect();
    await handle.stop();
  }
}

if (gc === undefined || MODE === undefined) {
  // Once for each figure, each with the flags it needs.
  const young = ['--min-semi-space-size=256', '--max-semi-space-size=256'];
  const heap = { bytes: young, time: [], ...(process.env['ALLOC_SITES'] === '1' ? { sites: young } : {}) };
  for (const [mode, flags] of Object.entries(heap)) {
    const child = spawnSync(process.execPath, [...process.execArgv, '--expose-gc', ...flags, fileURLToPath(import.meta.url)], {
      stdio: 'inherit',
      env: { ...process.env, ALLOC_MODE: mode },
    });
    if (child.status !== 0) process.exitCode = child.status ?? 1;
  }
} else {
  await main(gc);
}
