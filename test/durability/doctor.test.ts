/**
 * `checkRedisForReceipts` and `tool-receipts doctor` against real servers
 * started with the settings under test: an evicting policy, no AOF, an AOF
 * fsynced every second, replicas with and without durability, and a server
 * whose CONFIG command is renamed away (as managed services hide it).
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { runCli } from '../../src/cli/cli.js';
import { checkRedisForReceipts, type RedisFinding, type RedisReport } from '../../src/redis/index.js';
import { hasWaitAof } from '../../src/redis/durability/durability.js';
import { Capture } from '../cli/support.js';
import { LocalRedis, findOnPath } from '../support/redis-process.js';
import { uniquePrefix } from '../support/redis.js';
import { sentinelSkipReason } from '../support/redis-sentinel.js';
import { NO_SYNC_DELAY } from '../support/redis-cluster.js';

const skip = sentinelSkipReason(); // needs servers this process starts with its own flags

describe.skipIf(skip !== undefined)('checking Redis for what receipts need', () => {
  const started: LocalRedis[] = [];
  const clients: Redis[] = [];
  afterEach(async () => {
    for (const c of clients.splice(0)) c.disconnect();
    await Promise.all(started.splice(0).map((s) => s.stop()));
  });

  async function server(args: string[], options: { appendonly?: boolean; appendfsync?: 'always' | 'everysec' } = {}): Promise<LocalRedis> {
    const s = await LocalRedis.start(findOnPath('redis-server')!, { ...options, extraArgs: args }, uniquePrefix());
    started.push(s);
    return s;
  }
  function connect(s: LocalRedis): Redis {
    const c = new Redis(s.url, { maxRetriesPerRequest: 1 });
    clients.push(c);
    return c;
  }
  const finding = (report: RedisReport, check: string): RedisFinding => {
    const found = report.findings.find((f) => f.check === check);
    if (!found) throw new Error(`no ${check} finding in ${JSON.stringify(report)}`);
    return found;
  };
  async function cli(args: string[], url: string): Promise<{ code: number; out: string; err: string }> {
    const stdout = new Capture();
    const stderr = new Capture();
    const code = await runCli(['doctor', '--redis', url, ...args], { stdout, stderr, env: {} });
    return { code, out: stdout.text, err: stderr.text };
  }

  it('flags an evicting policy as the worst risk, and no AOF as a power-loss risk', async () => {
    const s = await server(['--maxmemory-policy', 'allkeys-lru']);
    const report = await checkRedisForReceipts(connect(s));
    expect(report.atRisk).toBe(true);
    expect(report.worst).toBe('eviction');
    expect(report.findings[0]).toMatchObject({ check: 'eviction', status: 'at-risk', risk: 'eviction' });
    expect(finding(report, 'eviction').message).toContain('allkeys-lru');
    expect(finding(report, 'persistence')).toMatchObject({ status: 'at-risk', risk: 'power-loss' });

    const run = await cli([], s.url);
    expect(run.code).toBe(1);
    expect(run.out).toMatch(/eviction\s+AT RISK \(eviction\)/);
    expect(run.out).toContain('Receipts are at risk (worst: eviction)');
    const json = await cli(['--json'], s.url);
    expect(json.code).toBe(1);
    expect(JSON.parse(json.out)).toMatchObject({ atRisk: true, worst: 'eviction' });
  });

  it('passes a server set up as recommended: noeviction, appendonly yes, appendfsync always, no replicas', async () => {
    const s = await server([], { appendonly: true, appendfsync: 'always' });
    const report = await checkRedisForReceipts(connect(s));
    expect(report.findings.filter((f) => f.status !== 'safe')).toEqual([]);
    expect(report.atRisk).toBe(false);
    const run = await cli([], s.url);
    expect(run.code).toBe(0);
    expect(run.out).toContain('Receipts are safe on this server.');
  });

  it("passes redis-server started with docker-compose.yml's own command line, which keeps its AOF in a named volume on 127.0.0.1", async () => {
    const compose = readFileSync(fileURLToPath(new URL('../../docker-compose.yml', import.meta.url)), 'utf8');
    const service = compose.slice(compose.indexOf('\n  redis:\n'), compose.indexOf('\n  redis-primary:'));
    const command = JSON.parse(/^    command: (\[.*\])$/m.exec(service)![1]!) as string[];
    expect(command[0]).toBe('redis-server');
    expect(service).toMatch(/^      - "127\.0\.0\.1:6379:6379"$/m);
    expect(service).toMatch(/^      - receipts-data:\/data$/m);
    expect(service).toMatch(/^    healthcheck:$/m);
    expect(compose).toMatch(/^volumes:\n  receipts-data:$/m);
    // The harness's own defaults (no AOF) come first; the compose file's flags override them.
    const s = await server(command.slice(1));
    const report = await checkRedisForReceipts(connect(s));
    expect(report.findings.filter((f) => f.status !== 'safe')).toEqual([]);
    expect((await cli([], s.url)).code).toBe(0);
  });

  it('says what everysec loses', async () => {
    const s = await server([], { appendonly: true, appendfsync: 'everysec' });
    const persistence = finding(await checkRedisForReceipts(connect(s)), 'persistence');
    expect(persistence).toMatchObject({ status: 'at-risk', risk: 'power-loss' });
    expect(persistence.message).toContain('the last second');
  });

  it('flags missing replicas when durability asks for them, and unacknowledged replicas when it does not', async () => {
    const primary = await server(NO_SYNC_DELAY, { appendonly: true });
    const alone = await checkRedisForReceipts(connect(primary), { durability: { replicas: 1 } });
    expect(finding(alone, 'replicas')).toMatchObject({ status: 'at-risk', risk: 'stalled' });
    expect((await cli(['--replicas', '1'], primary.url)).code).toBe(1);
    expect(finding(await checkRedisForReceipts(connect(primary)), 'replicas').status).toBe('safe');

    const replica = await server(['--replicaof', primary.host, String(primary.port)]);
    const admin = connect(primary);
    const deadline = performance.now() + 10_000;
    while (!/connected_slaves:1/.test(await admin.info('replication'))) {
      if (performance.now() > deadline) throw new Error('the replica never connected');
      await new Promise((r) => setTimeout(r, 50));
    }
    const unprotected = await checkRedisForReceipts(admin);
    expect(finding(unprotected, 'replicas')).toMatchObject({ status: 'at-risk', risk: 'failover' });
    expect(unprotected.worst).toBe('failover');
    const protectedByWait = await checkRedisForReceipts(admin, { durability: { replicas: 1 } });
    expect(finding(protectedByWait, 'replicas').status).toBe('safe');
    expect(protectedByWait.atRisk).toBe(false);
    expect((await cli(['--replicas', '1'], primary.url)).code).toBe(0);

    // Pointed at the replica itself: not "no replicas: safe", but a server no claim can write to.
    const onReplica = await checkRedisForReceipts(connect(replica));
    expect(finding(onReplica, 'replicas')).toMatchObject({ status: 'at-risk', risk: 'stalled' });
    expect(finding(onReplica, 'replicas').message).toContain('replica');
    expect((await cli([], replica.url)).code).toBe(1);
  });

  it('reports durability aof as stalling every claim when the server has no WAITAOF', async (ctx) => {
    const s = await server([], { appendonly: true });
    const redis = connect(s);
    if (await hasWaitAof(redis)) ctx.skip('this redis-server has WAITAOF (7.2+); the refusal cannot be shown here');
    const report = await checkRedisForReceipts(redis, { durability: { replicas: 0, aof: true } });
    expect(finding(report, 'waitaof')).toMatchObject({ status: 'at-risk', risk: 'stalled' });
    expect((await cli(['--aof'], s.url)).code).toBe(1);
  });

  it('says "unknown" for what it cannot read when CONFIG is refused, and still reads what INFO tells', async () => {
    const s = await server(['--rename-command', 'CONFIG', ''], { appendonly: true, appendfsync: 'always' });
    const redis = connect(s);
    await expect(redis.config('GET', 'appendfsync')).rejects.toThrow(/unknown command/i);
    const report = await checkRedisForReceipts(redis);
    expect(finding(report, 'persistence')).toMatchObject({ status: 'unknown' });
    expect(finding(report, 'persistence').message).toContain('appendfsync could not be read');
    expect(finding(report, 'eviction').status).toBe('safe'); // INFO memory still names the policy
    expect(report.atRisk).toBe(false);
    const run = await cli([], s.url);
    expect(run.code).toBe(0);
    expect(run.out).toMatch(/persistence\s+unknown/);
    expect(run.out).toContain('could not be made');
  });

  it('says CONFIG was refused as an unknown finding even when INFO tells the rest (a default server, no AOF)', async () => {
    const s = await server(['--rename-command', 'CONFIG', '']);
    const report = await checkRedisForReceipts(connect(s));
    expect(finding(report, 'config')).toMatchObject({ status: 'unknown' });
    expect(finding(report, 'config').message).toContain('CONFIG GET is refused');
    expect(finding(report, 'persistence')).toMatchObject({ status: 'at-risk', risk: 'power-loss' }); // INFO: aof_enabled:0
    const json = await cli(['--json'], s.url);
    expect(json.code).toBe(1);
    expect((JSON.parse(json.out) as RedisReport).findings.filter((f) => f.status === 'unknown').map((f) => f.check)).toEqual(['config']);
    const readable = await server([]);
    expect((await checkRedisForReceipts(connect(readable))).findings.some((f) => f.check === 'config')).toBe(false);
  });

  it("says whether the server takes Redis Functions, counting the package's libraries, and never calls either a risk", async () => {
    const s = await server([], { appendonly: true, appendfsync: 'always' });
    const admin = connect(s);
    await admin.call('FUNCTION', 'LOAD', "#!lua name=trc_doctor\nredis.register_function('trc_doctor', function() return 1 end)");
    const report = await checkRedisForReceipts(admin);
    expect(finding(report, 'functions')).toMatchObject({ status: 'safe' });
    expect(finding(report, 'functions').message).toContain('FCALL');
    expect(finding(report, 'functions').message).toContain('(1 script library trc_… here)');
    expect(report.atRisk).toBe(false);

    await admin.call('ACL', 'SETUSER', 'nofn', 'on', '>secret', '~*', '&*', '+@all', '-function');
    const denied = new Redis(s.url.replace('redis://', 'redis://nofn:secret@'), { maxRetriesPerRequest: 1 });
    clients.push(denied);
    const refused = await checkRedisForReceipts(denied);
    expect(finding(refused, 'functions')).toMatchObject({ status: 'safe' });
    expect(finding(refused, 'functions').message).toMatch(/^FUNCTION is refused \(NOPERM.*EVALSHA/);
    expect(refused.atRisk).toBe(false);
  });

  it('refuses a malformed --replicas with exit code 2', async () => {
    const run = await cli(['--replicas', 'two'], 'redis://127.0.0.1:1');
    expect(run.code).toBe(2);
    expect(run.err).toContain('--replicas must be a whole number');
  });
});
