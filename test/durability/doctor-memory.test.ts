/**
 * The doctor's memory advice against real servers: receipts of layout 2 at
 * the server's default listpack limits (hashtables and skiplists), the same
 * after the limits are raised (listpacks), a server with no receipts, one
 * whose CONFIG is renamed away or denied by an ACL (the advice cannot tell),
 * a user who may not SCAN, and a Cluster (one advice per master). The advice
 * never touches the safety verdict.
 */
import { Redis, type Cluster } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { runCli } from '../../src/cli/cli.js';
import { toolCallArgsHash } from '../../src/core/identity.js';
import { checkRedisForReceipts } from '../../src/redis/index.js';
import { adviseOnMemory, type MemoryAdvice, type MemoryReport } from '../../src/redis/operators/memory-advice.js';
import { ReceiptStore } from '../../src/redis/receipts/store.js';
import { Capture } from '../cli/support.js';
import { LocalRedis, findOnPath } from '../support/redis-process.js';
import { uniquePrefix } from '../support/redis.js';
import { sentinelSkipReason } from '../support/redis-sentinel.js';
import { useRedisCluster } from '../support/redis-cluster.js';

const skip = sentinelSkipReason(); // needs servers this process starts with its own flags

/** A result of about 300 bytes of JSON: over the default 64-byte hash-max-listpack-value. */
const RESULT = { ok: true, body: 'x'.repeat(280) };

/** Settles `runs` × `perRun` receipts of layout 2 under `prefix`, each with {@link RESULT}. */
async function settle(redis: Redis | Cluster, prefix: string, runs: number, perRun: number): Promise<void> {
  const store = new ReceiptStore({ redis, prefix, owner: 'test', receiptLayout: 2 });
  for (let run = 0; run < runs; run++) {
    for (let call = 0; call < perRun; call++) {
      const key = { tenantId: 't', runId: `run-${run}`, toolName: 'send_email', argsHash: await toolCallArgsHash({ run, call }) };
      const claim = await store.claim(key, { effect: 'opaque' });
      if (claim.fence === undefined) throw new Error(`unexpected ${claim.decision.kind}`);
      await store.complete(key, claim.fence, RESULT);
    }
  }
}

describe.skipIf(skip !== undefined)("the doctor's memory advice", () => {
  const started: LocalRedis[] = [];
  const clients: Redis[] = [];
  afterEach(async () => {
    for (const c of clients.splice(0)) c.disconnect();
    await Promise.all(started.splice(0).map((s) => s.stop()));
  });

  async function server(args: string[] = []): Promise<{ s: LocalRedis; redis: Redis }> {
    const s = await LocalRedis.start(findOnPath('redis-server')!, { extraArgs: args }, uniquePrefix());
    started.push(s);
    const redis = new Redis(s.url, { maxRetriesPerRequest: 1 });
    clients.push(redis);
    return { s, redis };
  }
  async function cli(url: string, args: string[]): Promise<{ code: number; out: string }> {
    const stdout = new Capture();
    const code = await runCli(['doctor', '--redis', url, ...args], { stdout, stderr: new Capture(), env: {} });
    return { code, out: stdout.text };
  }
  const only = (report: MemoryReport): MemoryAdvice => {
    expect(report.servers).toHaveLength(1);
    return report.servers[0]!;
  };
  const note = (advice: MemoryAdvice, topic: string) => advice.notes.find((n) => n.topic === topic)?.message ?? '';

  it('reads the default limits, says a compact receipt fits them, and measures layout-2 receipts as hashtables and skiplists', async () => {
    const { s, redis } = await server();
    await settle(redis, 'mem', 4, 5);
    const advice = only(await adviseOnMemory(redis, { prefix: 'mem' }));
    expect(advice.limits).toEqual({ hashEntries: 512, hashValue: 64, zsetEntries: 128, zsetValue: 64 }); // redis-server's defaults
    expect(advice.compactFits).toBe(true);
    expect(advice.sample).toMatchObject({
      receipts: 20,
      runs: 4,
      hashEncodings: { hashtable: 20 },
      runIndexEncodings: { skiplist: 4 },
      countingSetEncodings: { skiplist: 4 },
      layouts: { '2': 20 },
    });
    const bytes = advice.sample!.bytes!;
    expect(Math.abs(bytes.perReceipt - (bytes.hash + bytes.runIndex + bytes.countingSet))).toBeLessThanOrEqual(2); // each mean rounded
    expect(bytes.hash).toBeGreaterThan(300); // the result alone is about 300 bytes
    expect(note(advice, 'receipts')).toContain('20 receipt(s) sampled under mem, in 4 run(s)');

    // At most `samples` receipts are measured; another prefix's receipts are not counted.
    await settle(redis, 'mem:other', 1, 3);
    expect(only(await adviseOnMemory(redis, { prefix: 'mem', samples: 7 })).sample?.receipts).toBe(7);
    expect(only(await adviseOnMemory(redis, { prefix: 'mem:other' })).sample?.receipts).toBe(3);

    // The doctor prints the advice after its safety verdict, and the verdict is the same as without it.
    const safety = await checkRedisForReceipts(redis);
    const run = await cli(s.url, ['--prefix', 'mem']);
    expect(run.code).toBe(safety.atRisk ? 1 : 0);
    const verdict = run.out.indexOf('Receipts are at risk');
    const memory = run.out.indexOf('Memory (advice, not a safety finding)');
    expect(verdict).toBeGreaterThan(0);
    expect(memory).toBeGreaterThan(verdict);
    expect(run.out.slice(memory)).toMatch(/receipts\s+20 receipt\(s\) sampled under mem/);
    expect(run.out.slice(memory)).toMatch(/limits\s+hash-max-listpack-entries 512, hash-max-listpack-value 64/);
    const json = await cli(s.url, ['--prefix', 'mem', '--json']);
    const parsed = JSON.parse(json.out) as typeof safety & { memory: MemoryReport };
    expect({ findings: parsed.findings, atRisk: parsed.atRisk, worst: parsed.worst }).toEqual({
      findings: safety.findings,
      atRisk: safety.atRisk,
      worst: safety.worst,
    });
    expect(parsed.memory.prefix).toBe('mem');
    expect(parsed.memory.servers[0]?.sample?.receipts).toBe(20);
  });

  it('measures listpacks once the limits are raised, and a lower one than a compact receipt needs is named', async () => {
    const { redis } = await server();
    await redis.config('SET', 'hash-max-listpack-value', '1024');
    await redis.config('SET', 'zset-max-listpack-value', '256');
    await settle(redis, 'mem', 2, 3);
    const raised = only(await adviseOnMemory(redis, { prefix: 'mem' }));
    expect(raised.limits).toMatchObject({ hashValue: 1024, zsetValue: 256 });
    expect(raised.sample).toMatchObject({
      hashEncodings: { listpack: 6 },
      runIndexEncodings: { listpack: 2 },
      countingSetEncodings: { listpack: 2 },
    });

    await redis.config('SET', 'hash-max-listpack-value', '32');
    const lowered = only(await adviseOnMemory(redis, { prefix: 'mem' }));
    expect(lowered.compactFits).toBe(false);
    expect(note(lowered, 'compact')).toContain('raise hash-max-listpack-value to 64');
  });

  it('gives the limits alone when there are no receipts', async () => {
    const { redis } = await server();
    const advice = only(await adviseOnMemory(redis));
    expect(advice.sample).toBeUndefined();
    expect(advice.compactFits).toBe(true);
    expect(note(advice, 'receipts')).toContain('no receipts under the prefix trc');
  });

  it('says it cannot tell when CONFIG is refused, still measures the receipts, and leaves the safety verdict alone', async () => {
    const { s, redis } = await server(['--rename-command', 'CONFIG', '']);
    await settle(redis, 'trc', 1, 2);
    const advice = only(await adviseOnMemory(redis));
    expect(advice.limits).toBeUndefined();
    expect(advice.compactFits).toBeUndefined();
    expect(note(advice, 'limits')).toContain('cannot tell');
    expect(advice.notes.map((n) => n.topic)).toEqual(['limits', 'receipts']);
    expect(advice.sample?.receipts).toBe(2);

    const safety = await checkRedisForReceipts(redis);
    const json = await cli(s.url, ['--json']);
    expect(json.code).toBe(safety.atRisk ? 1 : 0);
    const parsed = JSON.parse(json.out) as typeof safety & { memory: MemoryReport };
    expect(parsed.atRisk).toBe(safety.atRisk);
    expect(parsed.worst).toBe(safety.worst);
    expect(parsed.findings).toEqual(safety.findings);
    expect(parsed.memory.servers[0]?.limits).toBeUndefined();
  });

  it('keeps the verdict when the server will not answer the advice (an ACL without SCAN), and says so', async () => {
    const { s, redis } = await server();
    await redis.call('ACL', 'SETUSER', 'noscan', 'on', '>secret', '~*', '&*', '+@all', '-scan');
    const url = s.url.replace('redis://', 'redis://noscan:secret@');
    const limited = new Redis(url, { maxRetriesPerRequest: 1 });
    clients.push(limited);
    await expect(adviseOnMemory(limited)).rejects.toThrow(/scan/i);
    const safety = await checkRedisForReceipts(limited);
    const run = await cli(url, []);
    expect(run.code).toBe(safety.atRisk ? 1 : 0);
    expect(run.out).toContain('Receipts are at risk');
    expect(run.out).toMatch(/Memory \(advice, not a safety finding\): cannot tell, the server did not answer: .*scan/i);
    const json = JSON.parse((await cli(url, ['--json'])).out) as { atRisk: boolean; memory: { error?: string } };
    expect(json.atRisk).toBe(safety.atRisk);
    expect(json.memory.error).toMatch(/scan/i);

    // CONFIG denied by an ACL, as a managed service does: the limits cannot be told, the receipts are still measured.
    await settle(redis, 'trc', 1, 2);
    await redis.call('ACL', 'SETUSER', 'noconfig', 'on', '>secret', '~*', '&*', '+@all', '-config');
    const noConfig = new Redis(s.url.replace('redis://', 'redis://noconfig:secret@'), { maxRetriesPerRequest: 1 });
    clients.push(noConfig);
    const advice = only(await adviseOnMemory(noConfig));
    expect(advice.limits).toBeUndefined();
    expect(note(advice, 'limits')).toContain('cannot tell');
    expect(advice.sample?.receipts).toBe(2);

    // MEMORY denied: the encodings are still counted, the bytes are said to be unmeasurable.
    await redis.call('ACL', 'SETUSER', 'nomemory', 'on', '>secret', '~*', '&*', '+@all', '-memory');
    const noMemory = new Redis(s.url.replace('redis://', 'redis://nomemory:secret@'), { maxRetriesPerRequest: 1 });
    clients.push(noMemory);
    const unmeasured = only(await adviseOnMemory(noMemory));
    expect(unmeasured.sample).toMatchObject({ receipts: 2, hashEncodings: { hashtable: 2 } });
    expect(unmeasured.sample?.bytes).toBeUndefined();
    expect(note(unmeasured, 'receipts')).toContain('MEMORY USAGE is refused');
  });

  it('refuses options it cannot use', async () => {
    const { redis } = await server();
    await expect(adviseOnMemory(redis, { prefix: 'a b' })).rejects.toMatchObject({ code: 'options.invalid' });
    await expect(adviseOnMemory(redis, { samples: 0 })).rejects.toMatchObject({ code: 'options.invalid' });
  });
});

describe.skipIf(skip !== undefined)("the doctor's memory advice on a Cluster", () => {
  const runningCluster = useRedisCluster();

  it('advises per master, naming it, and samples the receipts each one holds', async () => {
    const cluster = runningCluster();
    const redis = cluster.connect();
    const prefix = `${cluster.prefix}:mem`;
    await settle(redis, prefix, 9, 2);
    const report = await adviseOnMemory(redis, { prefix });
    expect(report.servers).toHaveLength(3);
    expect(new Set(report.servers.map((server) => server.node)).size).toBe(3);
    expect(report.servers.every((server) => server.limits?.hashValue === 64)).toBe(true);
    expect(report.servers.reduce((sum, server) => sum + (server.sample?.receipts ?? 0), 0)).toBe(18);
  });
});
