/**
 * One call at a time, without BullMQ's own work in the way: ours against the
 * peer (AWS Powertools' `makeIdempotent` over Redis, bench/peer.ts), on the
 * same server in the same run.
 *
 * 1. Sequential latency per call (the median call), fresh and replay: our
 *    processor called directly with a real BullMQ `Job` object (built
 *    untimed, never enqueued) holding one call, against the peer-wrapped tool. Rounds alternate the
 *    sides; the ratio is the median of per-round ratios.
 * 2. This process's CPU per call at `BENCH_CALL_CONCURRENCY` in flight:
 *    wrapped, control (the receipt store's claim + complete alone), peer. The
 *    wrapper's own cost per call is wrapped − control.
 * 3. Redis CPU per command: each Lua script alone (EVALSHA through the
 *    store; claim-4, heartbeat-3, complete-4, fail-3, and complete-claim-5,
 *    a complete that claims the next call), and the peer's SET / GET, as the server's execution µs (INFO
 *    commandstats) and its whole CPU (INFO cpu, reading and answering the
 *    socket included), per call.
 * 4. A turn of three 200 ms calls of a tool declared `parallel`, against the
 *    same calls of a tool that is not: wall time of the whole job.
 * 5. A three-call turn through the store alone, one call after another: a
 *    claim and a complete per call (six round trips) against each complete
 *    also claiming the next call (`completeAndClaim`, four round trips).
 *
 * Starts its own redis-server, or uses REDIS_URL (touching only its prefix).
 * Tunables: BENCH_LATENCY_CALLS (default 2000), BENCH_CALL_ROUNDS (default 3),
 * BENCH_CPU_CALLS (default 5000), BENCH_CALL_CONCURRENCY (default 50),
 * BENCH_SCRIPT_CALLS (default 3000).
 */
import { Job, Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { z } from 'zod';
import type { ToolCallReceiptKey } from '../src/core/identity.js';
import type { AttemptFence } from '../src/redis/errors.js';
import type { ToolJobData } from '../src/bullmq/job-data.js';
import { built } from './package.js';
import { startRedis } from '../test/support/redis.js';
import { peerIdempotent, type PeerCall } from './peer.js';
import { median, redisVersion, throughput, unlinkMatching } from './support.js';

const env = (name: string, fallback: number) => Number(process.env[name] ?? fallback);
const LATENCY_CALLS = env('BENCH_LATENCY_CALLS', 2000);
const ROUNDS = env('BENCH_CALL_ROUNDS', 3);
const CPU_CALLS = env('BENCH_CPU_CALLS', 5000);
const CONCURRENCY = env('BENCH_CALL_CONCURRENCY', 50);
const SCRIPT_CALLS = env('BENCH_SCRIPT_CALLS', 3000);
const RETENTION_MS = 86_400_000;

const { defineTool, withToolReceipts } = built;
const RESULT = { ok: true, messageId: 'msg-0000000000' };
const tool = defineTool({
  name: 'send_email',
  input: z.object({ to: z.string(), n: z.number().int() }),
  effect: 'opaque',
  destructive: false,
  execute: () => RESULT,
});
/** A 200 ms lookup, safe to run side by side, and the same lookup not declared so. */
const SLOW_MS = 200;
const slowTool = (name: string, parallel: boolean) =>
  defineTool({
    name,
    input: z.object({ n: z.number().int() }),
    effect: 'opaque',
    destructive: false,
    parallel,
    execute: () => new Promise((resolve) => setTimeout(() => resolve(RESULT), SLOW_MS)),
  });
const slowTools = [slowTool('search_parallel', true), slowTool('search_serial', false)];

/** Cumulative µs of `commands` (INFO commandstats) and the server's used CPU µs (INFO cpu). */
async function serverMicros(redis: Redis, commands: readonly string[]): Promise<{ exec: number; cpu: number }> {
  const info = String(await redis.call('INFO', 'cpu', 'commandstats'));
  let exec = 0;
  for (const command of commands) {
    exec += Number(new RegExp(`^cmdstat_${command}:calls=\\d+,usec=(\\d+)`, 'm').exec(info)?.[1] ?? 0);
  }
  const field = (name: string) => Number(new RegExp(`^${name}:([\\d.]+)`, 'm').exec(info)?.[1] ?? 0);
  return { exec, cpu: (field('used_cpu_user') + field('used_cpu_sys')) * 1e6 };
}

/** Redis µs per op while `work` runs `ops` ops: executing `commands`, and the server's whole CPU (I/O included). */
interface ServerCost {
  readonly exec: number;
  readonly cpu: number;
}
async function serverCost(admin: Redis, commands: readonly string[], ops: number, work: () => Promise<unknown>): Promise<ServerCost> {
  const before = await serverMicros(admin, commands);
  await work();
  const after = await serverMicros(admin, commands);
  return { exec: (after.exec - before.exec) / ops, cpu: (after.cpu - before.cpu) / ops };
}

/**
 * Median wall µs of one op, `count` ops one after another. The median, not
 * the mean: on a shared machine a few ops stall for a scheduler slice, and
 * the mean would report the machine rather than the code.
 */
async function sequentialUs(count: number, op: (i: number) => Promise<unknown>): Promise<number> {
  const each: number[] = [];
  for (let i = 0; i < count; i++) {
    const started = performance.now();
    await op(i);
    each.push((performance.now() - started) * 1000);
  }
  return median(each);
}

/** This process's CPU µs per op, `count` ops with `CONCURRENCY` in flight. */
async function cpuUs(count: number, op: (i: number) => Promise<unknown>): Promise<number> {
  const before = process.cpuUsage();
  await throughput(count, CONCURRENCY, async (i) => void (await op(i)));
  const used = process.cpuUsage(before);
  return (used.user + used.system) / count;
}

const spread = (values: number[]) => `${Math.min(...values).toFixed(2)}/${median(values).toFixed(2)}/${Math.max(...values).toFixed(2)}`;

async function main(): Promise<void> {
  const handle = await startRedis();
  const admin = new Redis(handle.url);
  const ours = new Redis(handle.url, { maxRetriesPerRequest: null });
  const theirs = new Redis(handle.url, { maxRetriesPerRequest: null });
  const prefix = `${handle.prefix}:calls`;
  // The Jobs are never enqueued: the queue only gives them their home.
  const queueConnection = new Redis(handle.url, { maxRetriesPerRequest: null, lazyConnect: true });
  const queue = new Queue('calls', { connection: queueConnection, prefix: `${prefix}:bull` });
  try {
    const wrapped = withToolReceipts({
      redis: ours,
      tools: [tool, ...slowTools],
      prefix: `${prefix}:trc`,
      retentionMs: RETENTION_MS,
      logger: pino({ level: 'silent' }),
    });
    const peer = peerIdempotent(theirs, `${prefix}:peer`, { retentionSeconds: RETENTION_MS / 1000, leaseMs: 30_000 }, () => RESULT);
    const store = wrapped.store;

    /** Real Job objects (never enqueued), one fresh call each, built before timing. */
    const jobsFor = (tag: string, count: number) =>
      Array.from({ length: count }, (_, i) => {
        const data: ToolJobData = {
          tenantId: 'bench',
          runId: `run-${tag}-${i % 100}`,
          calls: [{ id: `toolu_${tag}_${i}`, name: tool.name, input: { to: 'user@example.com', n: i } }],
        };
        return new Job(queue, 'call', data, { attempts: 1 }, `${tag}-${i}`);
      });
    const peerCallsFor = (tag: string, count: number): PeerCall[] =>
      Array.from({ length: count }, (_, i) => ({
        tenantId: 'bench',
        runId: `run-${tag}-${i % 100}`,
        name: tool.name,
        input: { to: 'user@example.com', n: i },
      }));
    const runJob = (job: Job) => wrapped(job, undefined);
    const keyFor = (tag: string, i: number): ToolCallReceiptKey => ({
      tenantId: 'bench',
      runId: `run-${tag}-${i % 100}`,
      toolName: tool.name,
      argsHash: `${tag}-${i}`,
    });

    // Warm-up: JIT, connections, script cache.
    for (const job of jobsFor('warm', 2000)) await runJob(job);
    for (const call of peerCallsFor('warm', 2000)) await peer(call);

    // 1. Sequential latency, fresh then replay of the same calls.
    const latency = { ours: { fresh: [] as number[], replay: [] as number[] }, peer: { fresh: [] as number[], replay: [] as number[] } };
    for (let r = 0; r < ROUNDS; r++) {
      const jobs = jobsFor(`lat${r}`, LATENCY_CALLS);
      const calls = peerCallsFor(`lat${r}`, LATENCY_CALLS);
      const sides = [
        async () => {
          latency.ours.fresh.push(await sequentialUs(LATENCY_CALLS, (i) => runJob(jobs[i]!)));
          latency.ours.replay.push(await sequentialUs(LATENCY_CALLS, (i) => runJob(jobs[i]!)));
        },
        async () => {
          latency.peer.fresh.push(await sequentialUs(LATENCY_CALLS, (i) => peer(calls[i]!)));
          latency.peer.replay.push(await sequentialUs(LATENCY_CALLS, (i) => peer(calls[i]!)));
        },
      ];
      if (r % 2 === 1) sides.reverse();
      for (const side of sides) await side();
    }

    // 2. This process's CPU per call.
    const cpu = { wrapped: [] as number[], control: [] as number[], peer: [] as number[] };
    for (let r = 0; r < ROUNDS; r++) {
      const jobs = jobsFor(`cpu${r}`, CPU_CALLS);
      const calls = peerCallsFor(`cpu${r}`, CPU_CALLS);
      cpu.wrapped.push(await cpuUs(CPU_CALLS, (i) => runJob(jobs[i]!)));
      cpu.control.push(
        await cpuUs(CPU_CALLS, async (i) => {
          const key = keyFor(`cpu${r}`, i);
          const claim = await store.claim(key, { effect: 'opaque' });
          if (claim.fence === undefined) throw new Error(`control: ${claim.decision.kind}`);
          await store.complete(key, claim.fence, { content: JSON.stringify(RESULT) });
        }),
      );
      cpu.peer.push(await cpuUs(CPU_CALLS, (i) => peer(calls[i]!)));
    }

    // 3. Redis CPU per command, each alone.
    const n = SCRIPT_CALLS;
    const keys = Array.from({ length: n }, (_, i) => keyFor('lua', i));
    const failKeys = Array.from({ length: n }, (_, i) => keyFor('lua-fail', i));
    const each =
      <K>(list: readonly K[], op: (item: K) => Promise<unknown>) =>
      () =>
        throughput(list.length, 16, async (i) => void (await op(list[i]!)));
    const script = (list: ToolCallReceiptKey[], op: (key: ToolCallReceiptKey) => Promise<unknown>) =>
      serverCost(admin, ['evalsha', 'eval', 'fcall'], list.length, each(list, op));
    const result = { content: JSON.stringify(RESULT) };
    // The fence each creating claim handed out, for the fenced writes after it.
    const fences = new Map<ToolCallReceiptKey, AttemptFence>();
    const claimNew = async (k: ToolCallReceiptKey) => {
      const claim = await store.claim(k, { effect: 'opaque' });
      if (claim.fence === undefined) throw new Error(`claim of a new key: ${claim.decision.kind}`);
      fences.set(k, claim.fence);
    };
    const fenceOf = (k: ToolCallReceiptKey) => fences.get(k)!;
    const scripts: [string, ServerCost][] = [
      ['claim (creates)', await script(keys, claimNew)],
      ['heartbeat', await script(keys, (k) => store.heartbeat(k, fenceOf(k)))],
      ['complete', await script(keys, (k) => store.complete(k, fenceOf(k), result))],
      ['claim (replays)', await script(keys, (k) => store.claim(k, { effect: 'opaque' }))],
    ];
    await each(failKeys, claimNew)();
    scripts.push(['fail', await script(failKeys, (k) => store.fail(k, fenceOf(k), { error: 'x', tier: 'neutral' }))]);
    // A turn's complete that also claims (creates) the next call of the run: one script for both.
    const fusedKeys = Array.from({ length: n }, (_, i) => keyFor('lua-fused', i));
    await each(fusedKeys, claimNew)();
    const next = { effect: 'opaque' } as const;
    scripts.push([
      'complete + claim next (complete-claim-5)',
      await script(fusedKeys, (k) =>
        store.completeAndClaim(k, fenceOf(k), result, { key: { ...k, argsHash: `${k.argsHash}-next` }, options: next }),
      ),
    ]);
    const peerKeys = Array.from({ length: n }, (_, i) => `${prefix}:peer-raw:${i}`);
    const record = JSON.stringify({ status: 'INPROGRESS', expiration: 0 });
    const completed = JSON.stringify({ status: 'COMPLETED', expiration: 0, data: RESULT });
    const peerCommand = (command: string, op: (key: string) => Promise<unknown>) => serverCost(admin, [command], n, each(peerKeys, op));
    const peerCommands: [string, ServerCost][] = [
      ['SET NX EX (creates)', await peerCommand('set', (k) => theirs.set(k, record, 'EX', 86_400, 'NX'))],
      ['SET EX (result)', await peerCommand('set', (k) => theirs.set(k, completed, 'EX', 86_400))],
      ['GET', await peerCommand('get', (k) => theirs.get(k))],
    ];
    // The peer's whole call, every command it sends: a fresh call, then a replay.
    const peerCalls = peerCallsFor('lua', n);
    const peerWhole = () =>
      serverCost(
        admin,
        ['set', 'get'],
        n,
        each(peerCalls, (call) => peer(call)),
      );
    const peerTotals: [string, ServerCost][] = [
      ['fresh', await peerWhole()],
      ['replay', await peerWhole()],
    ];

    // 4. A turn of three 200 ms calls, side by side and one after another.
    const turnMs = async (toolName: string, r: number) => {
      const data: ToolJobData = {
        tenantId: 'bench',
        runId: `run-turn-${toolName}-${r}`,
        calls: [1, 2, 3].map((n) => ({ id: `toolu_turn_${r}_${n}`, name: toolName, input: { n } })),
      };
      const job = new Job(queue, 'call', data, { attempts: 1 }, `turn-${toolName}-${r}`);
      const started = performance.now();
      await runJob(job);
      return performance.now() - started;
    };
    const turns = { parallel: [] as number[], serial: [] as number[] };
    for (let r = 0; r < ROUNDS; r++) {
      turns.parallel.push(await turnMs('search_parallel', r));
      turns.serial.push(await turnMs('search_serial', r));
    }

    // 5. A three-call turn through the store alone, one call after another: a claim and a complete per call
    //    (six round trips), against each complete also claiming the next call (four). Rounds alternate the order.
    const TURN_CALLS = 3;
    const turnKeys = (tag: string, i: number) =>
      Array.from({ length: TURN_CALLS }, (_, k): ToolCallReceiptKey => ({ ...keyFor(tag, i), argsHash: `${tag}-${i}-${k}` }));
    const separateTurn = async (keys: ToolCallReceiptKey[]) => {
      for (const key of keys) {
        const claim = await store.claim(key, { effect: 'opaque' });
        await store.complete(key, claim.fence!, result);
      }
    };
    const fusedTurn = async (keys: ToolCallReceiptKey[]) => {
      let claim = await store.claim(keys[0]!, { effect: 'opaque' });
      for (let k = 0; k < keys.length; k++) {
        const next = keys[k + 1];
        if (next === undefined) {
          await store.complete(keys[k]!, claim.fence!, result);
          break;
        }
        const { ahead } = await store.completeAndClaim(keys[k]!, claim.fence!, result, { key: next, options: { effect: 'opaque' } });
        claim = await store.claim(next, { effect: 'opaque' }, ahead!);
      }
    };
    const storeTurns = { separate: [] as number[], fused: [] as number[] };
    const TURN_COUNT = Math.max(1, Math.floor(LATENCY_CALLS / 4));
    for (let r = 0; r < ROUNDS; r++) {
      const sides = [
        async () => storeTurns.separate.push(await sequentialUs(TURN_COUNT, (i) => separateTurn(turnKeys(`turn-sep${r}`, i)))),
        async () => storeTurns.fused.push(await sequentialUs(TURN_COUNT, (i) => fusedTurn(turnKeys(`turn-fused${r}`, i)))),
      ];
      if (r % 2 === 1) sides.reverse();
      for (const side of sides) await side();
    }

    const version = await redisVersion(admin);
    console.log(
      `calls bench — redis ${version}, node ${process.versions.node}, ${ROUNDS} rounds; ratios min/median/max of per-round ratios`,
    );
    const perRound = (a: number[], b: number[]) => a.map((x, i) => x / (b[i] ?? x));
    const us = (values: number[]) => `${median(values).toFixed(0)} µs [${values.map((v) => v.toFixed(0)).join(', ')}]`;
    console.log(`  sequential latency per call, median of ${LATENCY_CALLS} calls one after another (processor called directly):`);
    console.log(
      `    fresh  ours ${us(latency.ours.fresh)}  peer ${us(latency.peer.fresh)}  ours/peer ${spread(perRound(latency.ours.fresh, latency.peer.fresh))}  (goal <= 1.10)`,
    );
    console.log(
      `    replay ours ${us(latency.ours.replay)}  peer ${us(latency.peer.replay)}  ours/peer ${spread(perRound(latency.ours.replay, latency.peer.replay))}  (goal <= 0.70)`,
    );
    console.log(`  this process's CPU per fresh call at ${CONCURRENCY} in flight (${CPU_CALLS} calls):`);
    const own = cpu.wrapped.map((w, i) => w - (cpu.control[i] ?? w));
    console.log(`    wrapped ${us(cpu.wrapped)}  control (claim + complete only) ${us(cpu.control)}  peer ${us(cpu.peer)}`);
    console.log(`    the wrapper's own cost (wrapped − control): ${us(own)}`);
    const ms = (values: number[]) => `${median(values).toFixed(0)} ms [${values.map((v) => v.toFixed(0)).join(', ')}]`;
    console.log(
      `  a turn of three ${SLOW_MS} ms calls: parallel tool ${ms(turns.parallel)} (goal < 300), one after another ${ms(turns.serial)}`,
    );
    console.log(
      `  a three-call turn through the store, median of ${TURN_COUNT} turns one after another: claim + complete per call (6 round trips) ` +
        `${us(storeTurns.separate)}, each complete claiming the next (4) ${us(storeTurns.fused)}, ` +
        `fused/separate ${spread(perRound(storeTurns.fused, storeTurns.separate))}`,
    );
    const cost = ([name, c]: [string, ServerCost]) => `${name} ${c.exec.toFixed(1)} / ${c.cpu.toFixed(0)}`;
    console.log(`  Redis µs per command, executing / whole server CPU incl. I/O (${n} each alone, 16 in flight):`);
    console.log(`    ours (EVALSHA): ${scripts.map(cost).join(', ')}`);
    console.log(`    peer:           ${peerCommands.map(cost).join(', ')}`);
    console.log(`    peer per call:  ${peerTotals.map(cost).join(', ')}`);
    // The whole server's CPU per fresh call: our claim that creates and our complete, against the peer's two SETs.
    const cpuOf = (list: [string, ServerCost][], name: string) => list.find(([label]) => label === name)?.[1].cpu ?? NaN;
    const oursFresh = cpuOf(scripts, 'claim (creates)') + cpuOf(scripts, 'complete');
    const peerFresh = cpuOf(peerTotals, 'fresh');
    const redisRatio = oursFresh / peerFresh;
    console.log(
      `  goal Redis CPU per fresh call ours/peer <= 1.50: ${oursFresh.toFixed(0)} vs ${peerFresh.toFixed(0)} µs = ${redisRatio.toFixed(2)} -> ${redisRatio <= 1.5 ? 'MET' : 'MISSED'}`,
    );
  } finally {
    if (!handle.controllable) await unlinkMatching(admin, `${prefix}:*`);
    await queue.close();
    queueConnection.disconnect();
    ours.disconnect();
    theirs.disconnect();
    admin.disconnect();
    await handle.stop();
  }
}

await main();
