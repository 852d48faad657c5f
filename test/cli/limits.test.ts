/**
 * `tool-receipts limits`: the counts under a prefix, per tenant, run and
 * fleet, with what each used and has left (a table, and --json); --reset
 * forgets one count's window and records it in the audit log as
 * `limit-reset`. Against a real Redis, through the command function and the
 * real CLI.
 */
import { parseArgs } from 'node:util';
import { describe, expect, it } from 'vitest';
import type { OptionValues } from '../../src/cli/command.js';
import { limitsCommand, limitsSpec, type LimitsArgs } from '../../src/cli/commands/limits.js';
import { defineLimit, LimitStore, type LimitCount } from '../../src/limits/index.js';
import { AuditLog } from '../../src/redis/operators/audit-log.js';
import { useRedis } from '../support/redis-fixture.js';
import { YEAR_MS } from '../support/limit-windows.js';
import { Capture, spawnCli } from './support.js';

const fixture = useRedis();

const argsOf = (argv: string[]): LimitsArgs => {
  const { values, positionals } = parseArgs({ args: argv, options: limitsSpec.options, allowPositionals: true });
  return limitsSpec.parse(values as OptionValues, positionals);
};

describe('tool-receipts limits', () => {
  it('lists each count with what it used and has left, and resets one into the audit log', async () => {
    const redis = fixture.connect();
    const prefix = `${fixture.handle().prefix}lim`;
    const store = new LimitStore({ redis, prefix });
    const emails = defineLimit({ name: 'emails', per: 'tenant', max: 5, windowMs: YEAR_MS });
    const steps = defineLimit({ name: 'steps', per: 'run', max: 2, windowMs: YEAR_MS });
    const fleet = defineLimit({ name: 'fleet', per: 'global', max: 100, windowMs: YEAR_MS });
    const callOf = (tenantId: string, runId: string, i: number) => ({ tenantId, runId, toolName: 'send_email', argsHash: `h${i}` });
    for (let i = 0; i < 3; i++) {
      const r = await store.reserve(emails, callOf('acme', 'run-1', i));
      if (r.granted) await store.commit(r.reservation);
    }
    await store.reserve(emails, callOf('globex', 'run-2', 0));
    await store.reserve(steps, callOf('acme', 'run-1', 9));
    await store.reserve(fleet, callOf('acme', 'run-1', 9));
    const ctx = { store: fixture.store({ prefix }), redis, out: new Capture() };

    await limitsCommand({ ...ctx, args: argsOf(['--json']) });
    const all = JSON.parse(ctx.out.text) as LimitCount[];
    expect(all.map((c) => [c.name, c.per, c.tenantId ?? null, c.runId ?? null, c.usage.used, c.usage.left])).toEqual([
      ['emails', 'tenant', 'acme', null, 3, 2],
      ['emails', 'tenant', 'globex', null, 1, 4],
      ['fleet', 'global', null, null, 1, 99],
      ['steps', 'run', 'acme', 'run-1', 1, 1],
    ]);
    const table = new Capture();
    await limitsCommand({ ...ctx, out: table, args: argsOf(['--tenant', 'acme']) });
    expect(table.text).toMatch(/^LIMIT\s+PER\s+WHOSE\s+KIND\s+USED\s+LEFT\s+MAX\s+NEXT FREE\s+ALL FREE/);
    expect(table.text).toMatch(/emails\s+tenant\s+acme\s+fixed\s+3\s+2\s+5/);
    expect(table.text).toMatch(/steps\s+run\s+acme \/ run-1\s+fixed\s+1\s+1\s+2/);
    expect(table.text).not.toContain('globex');

    const reset = new Capture();
    expect(
      await limitsCommand({ ...ctx, out: reset, args: argsOf(['--reset', '--limit', 'emails', '--tenant', 'acme', '--by', 'ops-ann']) }),
    ).toBeUndefined();
    expect(reset.text).toMatch(/^Reset limit emails for acme: it had used 3 of 5; 5 left until /);
    expect(await store.usage(emails, { tenantId: 'acme' })).toMatchObject({ committed: 0, left: 5 });
    const [entry] = await new AuditLog(redis, prefix).read({ count: 1 });
    expect(entry).toMatchObject({
      actor: 'ops-ann',
      source: 'cli',
      action: 'limit-reset',
      detail: { limit: 'emails', tenantId: 'acme', usedBefore: 3 },
    });

    const missing = new Capture();
    expect(await limitsCommand({ ...ctx, out: missing, args: argsOf(['--reset', '--limit', 'emails', '--tenant', 'initech']) })).toBe(1);
    expect(missing.text).toContain('No count of limit emails for tenant initech');
    expect(() => argsOf(['--reset'])).toThrow(/--reset needs --limit/);
    expect(() => argsOf(['--run', 'r'])).toThrow(/--run and --by go with --reset/);
  });

  it('shows a sliding window and a bucket with their kind, what is left, and when the next unit frees; resets a bucket', async () => {
    const redis = fixture.connect();
    const prefix = `${fixture.handle().prefix}kinds`;
    const store = new LimitStore({ redis, prefix });
    const browse = defineLimit({ name: 'browse', per: 'tenant', max: 4, windowMs: 60_000, kind: 'sliding' });
    const search = defineLimit({ name: 'search', per: 'tenant', max: 2, windowMs: 60_000, kind: 'bucket', burst: 3 });
    const callOf = (i: number) => ({ tenantId: 'acme', runId: 'run-1', toolName: 'browse', argsHash: `h${i}` });
    for (const limit of [browse, search]) {
      for (let i = 0; i < 2; i++) {
        const r = await store.reserve(limit, callOf(i));
        if (r.granted) await store.commit(r.reservation);
      }
    }
    const ctx = { store: fixture.store({ prefix }), redis, out: new Capture() };
    await limitsCommand({ ...ctx, args: argsOf(['--json']) });
    const [slid, bucket] = JSON.parse(ctx.out.text) as LimitCount[];
    expect(slid!.usage).toMatchObject({ kind: 'sliding', used: 2, left: 2, max: 4 });
    expect(bucket!.usage).toMatchObject({ kind: 'bucket', capacity: 3, used: 2, left: 1, max: 2 });
    // A sliding window's first unit leaves it a minute after its commit; a bucket's next unit refills in 30 s.
    expect(slid!.usage.nextFreeAtMs! - slid!.usage.nowMs).toBeGreaterThan(55_000);
    expect(slid!.usage.nextFreeAtMs! - slid!.usage.nowMs).toBeLessThanOrEqual(60_000);
    expect(bucket!.usage.nextFreeAtMs! - bucket!.usage.nowMs).toBeGreaterThan(25_000);
    expect(bucket!.usage.nextFreeAtMs! - bucket!.usage.nowMs).toBeLessThanOrEqual(30_000);

    const table = new Capture();
    await limitsCommand({ ...ctx, out: table, args: argsOf([]) });
    expect(table.text).toMatch(/browse\s+tenant\s+acme\s+sliding\s+2\s+2\s+4\s+\S+ \(in /);
    expect(table.text).toMatch(/search\s+tenant\s+acme\s+bucket\/3\s+2\s+1\s+2\s+\S+ \(in /);
    const reset = new Capture();
    await limitsCommand({ ...ctx, out: reset, args: argsOf(['--reset', '--limit', 'search', '--tenant', 'acme', '--by', 'ops']) });
    expect(reset.text).toMatch(/^Reset limit search for acme: it had used 2 of 2; 3 left until /);
    expect(await store.usage(search, { tenantId: 'acme' })).toMatchObject({ used: 0, left: 3 });
  });

  it('runs as the real CLI', async () => {
    const redis = fixture.connect();
    const prefix = `${fixture.handle().prefix}cli`;
    const store = new LimitStore({ redis, prefix });
    await store.reserve(defineLimit({ name: 'emails', per: 'tenant', max: 5, windowMs: YEAR_MS }), {
      tenantId: 'acme',
      runId: 'run-1',
      toolName: 'send_email',
      argsHash: 'h',
    });
    const run = await spawnCli(['limits', '--prefix', prefix, '--json'], fixture.handle().url);
    expect(run.code).toBe(0);
    expect((JSON.parse(run.stdout) as LimitCount[]).map((c) => [c.name, c.tenantId, c.usage.used])).toEqual([['emails', 'acme', 1]]);
  });

  it('lists the in-flight caps in a table of their own: slots held of k, calls waiting, and when the earliest lease passes', async () => {
    const redis = fixture.connect();
    const prefix = `${fixture.handle().prefix}caps`;
    const store = new LimitStore({ redis, prefix });
    const cap = defineLimit({ name: 'browsing', per: 'tenant', concurrency: 2, onLimit: 'wait' });
    const keys = store.caps.keysOf(cap, { tenantId: 'acme' });
    const ask = { leaseMs: 60_000, placeMs: 60_000, waker: '', adopt: false };
    for (const call of ['a', 'b', 'c']) await store.caps.acquire({ cap, keys, receiptKey: `receipt-${call}`, token: call }, ask);
    const ctx = { store: fixture.store({ prefix }), redis, out: new Capture() };
    await limitsCommand({ ...ctx, args: argsOf([]) });
    expect(ctx.out.text).toMatch(/^CAP\s+PER\s+WHOSE\s+HELD\s+WAITING\s+NEXT LAPSE/);
    expect(ctx.out.text).toMatch(/browsing\s+tenant\s+acme\s+2\/2\s+1\s+\S+ \(in /);
    const json = new Capture();
    await limitsCommand({ ...ctx, out: json, args: argsOf(['--json']) });
    expect(JSON.parse(json.text)).toEqual([
      expect.objectContaining({
        name: 'browsing',
        per: 'tenant',
        tenantId: 'acme',
        cap: expect.objectContaining({ concurrency: 2, held: 2, waiting: 1 }),
      }),
    ]);
  });
});
