/**
 * The release's receipt layouts (today: layout 2, the default before the
 * compact one) against leaner prototypes, paired: Redis µs and bytes per
 * fresh call (a claim that creates and its complete).
 *
 * Each pass settles BENCH_LAYOUT_CALLS (default 5,000) fresh calls over
 * BENCH_LAYOUT_RUNS (default 500) runs, 16 in flight, with a result of about
 * 300 bytes of JSON, through one of:
 *   today     claim-4.lua and complete-4.lua as the store sends them (EVALSHA)
 *   today, listpack  the same on the server with its listpack limits raised
 *             (LISTPACK_SETTINGS in bench/support.ts, docs/redis.md#memory)
 *   layout 4  the same scripts creating layout-4 receipts (receiptLayout: 4:
 *             no fields repeating the key), on the server's own settings and
 *             (layout 4, listpack) on the raised limits
 *   layout 5  the same scripts creating compact receipts, the default layout
 *             (receiptLayout: 5: short index members, long results in parts),
 *             on the server's own settings; and (layout 5, FCALL) sent as
 *             the release sends them where the server takes functions, FCALL
 *             of their libraries (docs/redis.md#scripts-as-functions)
 *   compact   bench/layout/lean-*.lua with the run index kept: short members
 *             and key (a 22-character digest of tool and args), the fields
 *             that repeat the key dropped, no TYPE prechecks, fewest calls
 *   lean      the same with the run index folded into the counting set
 *   lean fcall  lean loaded once as a Redis Function and sent as FCALL
 *   floor     EVALSHA of `return 1`, twice: the least any two scripts cost
 *   peer      Powertools' record: SET NX EX of the in-progress record, then
 *             SET EX of the completed one
 * on a server of its own, flushed before each pass and its stats reset, so
 * INFO commandstats' usec (the commands' execution) and used_cpu (the whole
 * server: reading, parsing, replying too) and used_memory cover that pass
 * alone. Rounds rotate the order; ratios are taken within a round and
 * reported as the median of the rounds (min–max).
 *
 * The prototypes keep the claim's decision, the fence and what exact counts
 * need, but not everything the release scripts promise (corrupt-key
 * refusals, the history, the job field, the listing by creation when the
 * index is folded): they bound what a leaner layout could save, they are not
 * a layout to ship. Tunables: BENCH_LAYOUT_CALLS, BENCH_LAYOUT_RUNS,
 * BENCH_LAYOUT_ROUNDS (default 10), BENCH_LAYOUT_RESULT (`small` for a
 * result of about 30 bytes). Always starts its own redis-server
 * (it flushes it).
 *
 * `--callgrind` runs that server under valgrind's callgrind instead and
 * counts the instructions it executes per fresh call (zeroed before each
 * pass, dumped after it): a figure the machine's load does not move, where
 * µs on a shared machine do (default 1,000 calls and 3 rounds then).
 */
import { execFileSync, spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { breakerField, callRedisKeys, COMPACT_RECEIPT_SCHEMA, runIndexEntry } from '../src/redis/keys.js';
import { luaScript, scriptSource } from '../src/redis/scripts/scripts.js';
import { startRedis } from '../test/support/redis.js';
import { applySettings, LISTPACK_SETTINGS, median, realisticResult, redisVersion, serverSettings, throughput } from './support.js';

const CALLGRIND = process.argv.includes('--callgrind');
const CALLS = Number(process.env['BENCH_LAYOUT_CALLS'] ?? (CALLGRIND ? 1_000 : 5_000));
const RUNS = Number(process.env['BENCH_LAYOUT_RUNS'] ?? (CALLGRIND ? 100 : 500));
const ROUNDS = Number(process.env['BENCH_LAYOUT_ROUNDS'] ?? (CALLGRIND ? 3 : 10));
/** BENCH_LAYOUT_RESULT=small: a result of about 30 bytes (the calls bench's shape) instead of about 300. */
const SMALL_RESULT = process.env['BENCH_LAYOUT_RESULT'] === 'small';
const CONCURRENCY = 16;
const LEASE_MS = 30_000;
const RETENTION_MS = 86_400_000;
const OWNER = 'worker-7f3a:1234';

const sha1 = (text: string) => createHash('sha1').update(text).digest('hex');
const prototype = (name: string) => readFileSync(new URL(`./layout/${name}.lua`, import.meta.url), 'utf8');

/** One fresh call of pass `tag`: its key parts, its short member, its result. */
function callOf(tag: string, i: number) {
  const tenantId = 'tenant-1';
  const runId = `run-${tag}-${i % RUNS}`;
  const toolName = 'send_email';
  const argsHash = createHash('sha256').update(`${tag}:${i}`).digest('hex');
  const member = createHash('sha256').update(`${toolName}:${argsHash}`).digest().subarray(0, 16).toString('base64url');
  const result = SMALL_RESULT ? JSON.stringify({ ok: true, messageId: `msg-${i}` }) : JSON.stringify(realisticResult(i));
  return { key: { tenantId, runId, toolName, argsHash }, member, result };
}
type Call = ReturnType<typeof callOf>;

interface Variant {
  readonly name: string;
  readonly send: (redis: Redis, prefix: string, call: Call) => Promise<void>;
  /** Server settings (CONFIG SET) the pass runs under; the server's own otherwise. */
  readonly settings?: Readonly<Record<string, string>>;
}

/** A layout of lean-claim.lua / lean-complete.lua: `withIndex` keeps the run index as its own sorted set. */
function leanVariant(name: string, shas: { claim: string; complete: string }, withIndex: boolean, fcall: boolean): Variant {
  return {
    name,
    async send(redis, prefix, { key, member, result }) {
      const tag = `{${key.tenantId}|${key.runId}}`;
      const keys = [`${prefix}:r:${tag}:${member}`, `${prefix}:c:${tag}`, `${prefix}:b:${tag}`];
      if (withIndex) keys.push(`${prefix}:i:${tag}`);
      const epoch = randomBytes(8).toString('hex');
      const rejections = breakerField(key.toolName, 'rejections');
      const claimArgs = [LEASE_MS, RETENTION_MS, OWNER, 'opaque', epoch, member, breakerField(key.toolName, 'removed'), rejections];
      const claimed = (
        fcall
          ? await redis.call('FCALL', 'lean_claim', keys.length, ...keys, ...claimArgs)
          : await redis.evalsha(shas.claim, keys.length, ...keys, ...claimArgs)
      ) as unknown[];
      if (claimed[0] !== 1) throw new Error(`${name}: the claim did not create`);
      const completeArgs = [1, result, RETENTION_MS, rejections, epoch, member];
      const done = fcall
        ? await redis.call('FCALL', 'lean_complete', keys.length, ...keys, ...completeArgs)
        : await redis.evalsha(shas.complete, keys.length, ...keys, ...completeArgs);
      if (done !== 1) throw new Error(`${name}: the complete was fenced out`);
    },
  };
}

/** A redis-server under callgrind, collecting from the start; `count(pass)` runs `pass` and returns the instructions it cost the server. */
async function startCallgrindRedis(): Promise<{ url: string; stop: () => void; count: (pass: () => Promise<void>) => Promise<number> }> {
  const port = await new Promise<number>((resolve) => {
    const probe = createServer().listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });
  const dir = mkdtempSync(join(tmpdir(), 'layout-callgrind-'));
  const child = spawn(
    'valgrind',
    [
      '--tool=callgrind',
      `--callgrind-out-file=${join(dir, 'cg.out')}`,
      'redis-server',
      '--port',
      String(port),
      '--save',
      '',
      '--appendonly',
      'no',
    ],
    { stdio: 'ignore' },
  );
  const url = `redis://127.0.0.1:${port}`;
  const probe = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => 200 });
  probe.on('error', () => undefined);
  for (let tries = 0; ; tries++) {
    try {
      await probe.connect();
      await probe.ping();
      break;
    } catch (err) {
      if (tries > 150) throw new Error(`redis-server under callgrind did not answer: ${String(err)}`);
      probe.disconnect();
      await new Promise((r) => setTimeout(r, 200));
    }
  }
  probe.disconnect();
  const control = (flag: string) => execFileSync('callgrind_control', [flag, String(child.pid)], { stdio: 'ignore' });
  return {
    url,
    stop() {
      child.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    },
    async count(pass) {
      control('-z');
      await pass();
      for (const file of readdirSync(dir)) rmSync(join(dir, file));
      control('-d');
      const dump = readdirSync(dir).find((file) => file.startsWith('cg.out'));
      const text = dump === undefined ? '' : readFileSync(join(dir, dump), 'utf8');
      const totals = /^(?:totals|summary):\s*(\d+)/m.exec(text);
      if (totals === null) throw new Error('callgrind wrote no totals');
      return Number(totals[1]);
    },
  };
}

/** The server's CPU µs, the commands' execution µs (INFO commandstats) and used_memory. */
async function serverFigures(redis: Redis): Promise<{ cpu: number; exec: number; memory: number }> {
  const info = String(await redis.call('INFO', 'cpu', 'commandstats', 'memory'));
  const field = (name: string) => Number(new RegExp(`^${name}:([\\d.]+)`, 'm').exec(info)?.[1] ?? 0);
  let exec = 0;
  for (const match of info.matchAll(/^cmdstat_(evalsha|fcall|set):calls=\d+,usec=(\d+)/gm)) exec += Number(match[2]);
  return { cpu: (field('used_cpu_user') + field('used_cpu_sys')) * 1e6, exec, memory: field('used_memory') };
}

async function main(): Promise<void> {
  delete process.env['REDIS_URL'];
  const grind = CALLGRIND ? await startCallgrindRedis() : undefined;
  const handle = grind === undefined ? await startRedis() : { url: grind.url, prefix: 'lp', stop: async () => grind.stop() };
  const redis = new Redis(handle.url);
  const prefix = handle.prefix;
  try {
    const claimSha = String(await redis.script('LOAD', scriptSource('claim-4.lua')));
    const completeSha = String(await redis.script('LOAD', scriptSource('complete-4.lua')));
    const claimFunction = luaScript('claim-4.lua').function!;
    const completeFunction = luaScript('complete-4.lua').function!;
    const lean = { claim: sha1(prototype('lean-claim')), complete: sha1(prototype('lean-complete')) };
    await redis.script('LOAD', prototype('lean-claim'));
    await redis.script('LOAD', prototype('lean-complete'));
    const floorSha = String(await redis.script('LOAD', 'return 1'));
    const library = [
      '#!lua name=leanbench',
      `redis.register_function('lean_claim', function(KEYS, ARGV)\n${prototype('lean-claim')}\nend)`,
      `redis.register_function('lean_complete', function(KEYS, ARGV)\n${prototype('lean-complete')}\nend)`,
    ].join('\n');
    await redis.call('FUNCTION', 'LOAD', 'REPLACE', library);

    /** The release's claim and complete, creating receipts in `layout` (claim-4.lua's ARGV[13]; layout 5 with its member, as the store sends it). */
    const releaseSend =
      (layout: '2' | '4' | '5', byFunction = false): Variant['send'] =>
      async (r, p, { key, result }) => {
        // Loaded by the first FCALL that misses it (FLUSHALL between passes leaves functions in place).
        const run = async (sha: string, name: string, library: string, args: (string | number)[]) => {
          if (!byFunction) return r.evalsha(sha, 4, ...args);
          try {
            return await r.call('FCALL', name, 4, ...args);
          } catch {
            await r.call('FUNCTION', 'LOAD', 'REPLACE', library);
            return r.call('FCALL', name, 4, ...args);
          }
        };
        const keys = callRedisKeys(p, key);
        const layoutArg = layout === '5' ? `5:${runIndexEntry(keys[0]!, COMPACT_RECEIPT_SCHEMA)}` : layout;
        const epoch = randomBytes(8).toString('hex');
        const rejections = breakerField(key.toolName, 'rejections');
        const claimed = (await run(claimSha, claimFunction.name, claimFunction.library, [
          ...keys,
          LEASE_MS,
          RETENTION_MS,
          OWNER,
          'opaque',
          key.tenantId,
          key.runId,
          key.toolName,
          key.argsHash,
          breakerField(key.toolName, 'removed'),
          rejections,
          epoch,
          '',
          layoutArg,
        ])) as unknown[];
        if (claimed[0] !== 1) throw new Error(`layout ${layout}: the claim did not create`);
        await run(completeSha, completeFunction.name, completeFunction.library, [...keys, 1, result, RETENTION_MS, rejections, epoch]);
      };
    const variants: Variant[] = [
      { name: 'today', send: releaseSend('2') },
      { name: 'today, listpack', send: releaseSend('2'), settings: LISTPACK_SETTINGS },
      { name: 'layout 4', send: releaseSend('4') },
      { name: 'layout 4, listpack', send: releaseSend('4'), settings: LISTPACK_SETTINGS },
      { name: 'layout 5 (default)', send: releaseSend('5') },
      { name: 'layout 5, FCALL', send: releaseSend('5', true) },
      leanVariant('compact', lean, true, false),
      leanVariant('lean', lean, false, false),
      leanVariant('lean fcall', lean, false, true),
      {
        name: 'floor',
        async send(r) {
          await r.evalsha(floorSha, 0);
          await r.evalsha(floorSha, 0);
        },
      },
      {
        name: 'peer',
        async send(r, p, { key, result }) {
          const name = `${p}:peer#${createHash('md5').update(JSON.stringify(key)).digest('hex')}`;
          const expiration = Math.floor(Date.now() / 1000) + RETENTION_MS / 1000;
          const inProgress = `{"status":"INPROGRESS","expiration":${expiration},"in_progress_expiration":${Date.now() + LEASE_MS}}`;
          if ((await r.set(name, inProgress, 'EX', RETENTION_MS / 1000, 'NX')) !== 'OK') throw new Error('peer: the record existed');
          await r.set(name, `{"status":"COMPLETED","expiration":${expiration},"data":${result}}`, 'EX', RETENTION_MS / 1000);
        },
      },
    ];
    const figures = new Map(
      variants.map((v) => [v.name, { exec: [] as number[], cpu: [] as number[], bytes: [] as number[], instructions: [] as number[] }]),
    );
    const ownSettings = await serverSettings(redis, Object.keys(LISTPACK_SETTINGS));
    const pass = async (variant: Variant, tag: string) => {
      const calls = Array.from({ length: CALLS }, (_, i) => callOf(tag, i));
      await applySettings(redis, { ...ownSettings, ...variant.settings });
      await redis.flushall('SYNC');
      await redis.call('CONFIG', 'RESETSTAT');
      await new Promise((r) => setTimeout(r, 50));
      const before = await serverFigures(redis);
      const run = () => throughput(CALLS, CONCURRENCY, (i) => variant.send(redis, prefix, calls[i]!)).then(() => undefined);
      const instructions = grind === undefined ? (await run(), 0) : await grind.count(run);
      const after = await serverFigures(redis);
      return {
        instructions: instructions / CALLS,
        exec: (after.exec - before.exec) / CALLS,
        cpu: (after.cpu - before.cpu) / CALLS,
        bytes: (after.memory - before.memory) / CALLS,
      };
    };
    for (const variant of variants) await pass(variant, `warm-${variant.name}`);
    const started = performance.now();
    for (let round = 0; round < ROUNDS; round++) {
      const order = variants.map((_, k) => variants[(k + round) % variants.length]!);
      for (const variant of order) {
        const seen = await pass(variant, `r${round}`);
        const into = figures.get(variant.name)!;
        into.exec.push(seen.exec);
        into.cpu.push(seen.cpu);
        into.bytes.push(seen.bytes);
        into.instructions.push(seen.instructions);
      }
    }
    await redis.flushall('SYNC');

    const spread = (values: number[]) =>
      `${median(values).toFixed(2)} (${Math.min(...values).toFixed(2)}–${Math.max(...values).toFixed(2)})`;
    const ratios = (of: number[], to: number[]) => of.map((v, r) => v / (to[r] ?? v));
    const peer = figures.get('peer')!;
    const today = figures.get('today')!;
    console.log(
      `layout prototype bench — redis ${await redisVersion(redis)}, ${CALLS} fresh calls (claim + complete) over ${RUNS} runs per pass, ` +
        `${CONCURRENCY} in flight, results of ${callOf('x', 42).result.length} bytes; ${ROUNDS} rounds rotating, medians ` +
        `(${((performance.now() - started) / 1000).toFixed(0)} s)`,
    );
    if (grind !== undefined) {
      console.log('  server instructions per fresh call (callgrind; the µs figures are inflated by valgrind)');
      for (const variant of variants) {
        const f = figures.get(variant.name)!;
        console.log(
          `  ${variant.name.padEnd(18)} ${(median(f.instructions) / 1000).toFixed(1).padStart(8)}k   / peer ` +
            `${spread(ratios(f.instructions, peer.instructions)).padEnd(18)} / today ${spread(ratios(f.instructions, today.instructions))}`,
        );
      }
    }
    console.log(
      '  per fresh call       exec µs  server CPU µs  bytes   exec / peer        CPU / peer         exec / today       CPU / today        bytes / peer',
    );
    for (const variant of variants) {
      const f = figures.get(variant.name)!;
      const bytes = variant.name === 'floor' ? '      -' : median(f.bytes).toFixed(0).padStart(7);
      const bytesRatio = variant.name === 'floor' ? '-' : spread(ratios(f.bytes, peer.bytes));
      console.log(
        `  ${variant.name.padEnd(18)} ${median(f.exec).toFixed(1).padStart(8)} ${median(f.cpu).toFixed(1).padStart(14)} ${bytes}   ` +
          `${spread(ratios(f.exec, peer.exec)).padEnd(18)} ${spread(ratios(f.cpu, peer.cpu)).padEnd(18)} ` +
          `${spread(ratios(f.exec, today.exec)).padEnd(18)} ${spread(ratios(f.cpu, today.cpu)).padEnd(18)} ${bytesRatio}`,
      );
    }
    console.log('  goals: Redis CPU per fresh call ≤ 1.5× the peer; bytes per receipt ≤ 2× the peer');
  } finally {
    redis.disconnect();
    await handle.stop();
  }
}

await main();
