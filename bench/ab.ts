/**
 * A paired A/B of two builds of the package in one process: `npx tsx
 * bench/ab.ts <dirA> <dirB>` (each a copy of `dist/` inside the repository,
 * so its imports resolve). Each build gets a wrapper on its own connection
 * to one throwaway Redis; rounds alternate the builds (A B B A ...), and
 * each pass runs AB_CALLS fresh one-call jobs through the processor one
 * after another (real BullMQ Job objects, never enqueued), taking this
 * process's CPU per call, the median call's latency, and the server's CPU
 * per call and the µs it spent executing scripts (EVALSHA, INFO
 * commandstats: claim, complete and the run's registration). Prints the median of per-round B/A ratios: the cut's figure for
 * a commit message. Tunables: AB_CALLS (default 3000), AB_ROUNDS (default
 * 10), AB_CONCURRENCY (default 1: calls one after another; n keeps n in
 * flight), AB_FRESH_RUNS (1: every job a run of its own, so each registers
 * its run; default 0: jobs cycle through 100 runs), AB_TURN (calls per job,
 * run one after another; default 1), AB_LAYOUT_A and AB_LAYOUT_B (the
 * receipt layout each side writes, as `receiptLayout`: two layouts of one
 * build, paired; each build's default when unset).
 */
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Job, Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { z } from 'zod';
import type { ToolJobData } from '../src/bullmq/job-data.js';
import { startRedis } from '../test/support/redis.js';
import { median } from './support.js';

type RootEntry = typeof import('../src/index.js');
const CALLS = Number(process.env['AB_CALLS'] ?? 3000);
const ROUNDS = Number(process.env['AB_ROUNDS'] ?? 10);
const CONCURRENCY = Number(process.env['AB_CONCURRENCY'] ?? 1);
const FRESH_RUNS = process.env['AB_FRESH_RUNS'] === '1';
const TURN = Number(process.env['AB_TURN'] ?? 1);
const RESULT = { ok: true, messageId: 'msg-0000000000' };
/** The receipt layout each side writes (AB_LAYOUT_A, AB_LAYOUT_B; its build's default when unset). */
const LAYOUTS = [process.env['AB_LAYOUT_A'], process.env['AB_LAYOUT_B']].map((text) => (text ? (Number(text) as 2 | 4 | 5) : undefined));

/** The server's whole CPU µs (INFO cpu) and the µs it spent executing scripts (EVALSHA, EVAL and FCALL in INFO commandstats). */
async function redisUs(admin: Redis): Promise<{ cpu: number; scripts: number }> {
  const info = String(await admin.call('INFO', 'cpu', 'commandstats'));
  const field = (name: string) => Number(new RegExp(`^${name}:([\\d.]+)`, 'm').exec(info)?.[1] ?? 0);
  let scripts = 0;
  for (const match of info.matchAll(/^cmdstat_(?:evalsha|eval|fcall):calls=\d+,usec=(\d+)/gm)) scripts += Number(match[1]);
  return { cpu: (field('used_cpu_user') + field('used_cpu_sys')) * 1e6, scripts };
}

async function main(): Promise<void> {
  const dirs = process.argv.slice(2, 4);
  if (dirs.length !== 2) throw new Error('usage: tsx bench/ab.ts <build A dir> <build B dir>');
  const handle = await startRedis();
  const admin = new Redis(handle.url);
  const queueConnection = new Redis(handle.url, { maxRetriesPerRequest: null, lazyConnect: true });
  const queue = new Queue('ab', { connection: queueConnection, prefix: `${handle.prefix}:bull` });
  const connections: Redis[] = [];
  try {
    const sides = await Promise.all(
      dirs.map(async (dir, n) => {
        const built = (await import(pathToFileURL(resolve(dir, 'index.js')).href)) as RootEntry;
        const tool = built.defineTool({
          name: 'send_email',
          input: z.object({ to: z.string(), n: z.number().int() }),
          effect: 'opaque',
          destructive: false,
          execute: () => RESULT,
        });
        const redis = new Redis(handle.url, { maxRetriesPerRequest: null });
        connections.push(redis);
        const layout = LAYOUTS[n];
        const wrapped = built.withToolReceipts({
          redis,
          tools: [tool],
          prefix: `${handle.prefix}:${n}`,
          logger: pino({ level: 'silent' }),
          ...(layout === undefined ? {} : { receiptLayout: layout }),
        });
        return {
          name: n === 0 ? 'A' : 'B',
          wrapped,
          cpu: [] as number[],
          latency: [] as number[],
          server: [] as number[],
          scripts: [] as number[],
        };
      }),
    );
    const jobsFor = (tag: string) =>
      Array.from({ length: CALLS }, (_, i) => {
        const data: ToolJobData = {
          tenantId: 'ab',
          runId: FRESH_RUNS ? `run-${tag}-${i}` : `run-${tag}-${i % 100}`,
          calls: Array.from({ length: TURN }, (_, k) => ({
            id: `toolu_${tag}_${i}_${k}`,
            name: 'send_email',
            input: { to: 'user@example.com', n: i * TURN + k },
          })),
        };
        return new Job(queue, 'call', data, { attempts: 1 }, `${tag}-${i}`);
      });
    const pass = async (side: (typeof sides)[number], tag: string, record: boolean) => {
      const jobs = jobsFor(tag);
      const each: number[] = [];
      const server = await redisUs(admin);
      const before = process.cpuUsage();
      let next = 0;
      const lane = async () => {
        while (next < jobs.length) {
          const job = jobs[next++]!;
          const started = performance.now();
          await side.wrapped(job, undefined, new AbortController().signal);
          each.push((performance.now() - started) * 1000);
        }
      };
      await Promise.all(Array.from({ length: CONCURRENCY }, lane));
      const used = process.cpuUsage(before);
      const after = await redisUs(admin);
      if (!record) return;
      side.cpu.push((used.user + used.system) / CALLS);
      side.latency.push(median(each));
      side.server.push((after.cpu - server.cpu) / CALLS);
      side.scripts.push((after.scripts - server.scripts) / CALLS);
    };
    for (const side of sides) await pass(side, `warm-${side.name}`, false);
    for (let r = 0; r < ROUNDS; r++) {
      const order = r % 2 === 0 ? sides : [...sides].reverse();
      for (const side of order) await pass(side, `r${r}-${side.name}`, true);
    }
    const [a, b] = sides as [(typeof sides)[number], (typeof sides)[number]];
    const ratio = (x: number[], y: number[]) => y.map((v, r) => v / (x[r] ?? v));
    const show = (what: string, x: number[], y: number[], unit: string) => {
      const ratios = ratio(x, y);
      console.log(
        `${what.padEnd(26)} A ${median(x).toFixed(1)} ${unit}, B ${median(y).toFixed(1)} ${unit}; B/A median ${median(ratios).toFixed(3)} ` +
          `(min ${Math.min(...ratios).toFixed(3)}, max ${Math.max(...ratios).toFixed(3)}, ${ROUNDS} rounds)`,
      );
    };
    const how = CONCURRENCY === 1 ? 'one after another' : `${CONCURRENCY} in flight`;
    const jobs = TURN === 1 ? 'one-call jobs' : `jobs of ${TURN} calls`;
    console.log(
      `A = ${dirs[0]}, B = ${dirs[1]}; ${CALLS} fresh ${jobs} per pass, ${how}, ${FRESH_RUNS ? 'each its own run' : 'over 100 runs'}`,
    );
    show('node CPU per job', a.cpu, b.cpu, 'µs');
    show('median job latency', a.latency, b.latency, 'µs');
    show('redis CPU per job', a.server, b.server, 'µs');
    show('redis script exec per job', a.scripts, b.scripts, 'µs');
  } finally {
    for (const redis of connections) redis.disconnect();
    queueConnection.disconnect();
    admin.disconnect();
    await handle.stop();
  }
}

await main();
