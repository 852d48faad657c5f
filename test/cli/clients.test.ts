/**
 * The CLI with node-redis inside (what it uses when ioredis is not
 * installed; TOOL_RECEIPTS_CLIENT=node-redis picks it here): the same flags
 * reach the same receipts, a server that does not answer is the same
 * `cli.redis_unavailable`, and a Cluster is searched on every master.
 */
import { describe, expect, it } from 'vitest';
import { runCli } from '../../src/cli/cli.js';
import { clusterSkipReason, startRedisCluster } from '../support/redis-cluster.js';
import { freshKey, useRedis } from '../support/redis-fixture.js';
import { Capture, makeAmbiguous } from './support.js';

const fixture = useRedis();

async function cli(argv: string[], env: Record<string, string> = {}) {
  const out = new Capture();
  const err = new Capture();
  const code = await runCli(argv, { stdout: out, stderr: err, env: { TOOL_RECEIPTS_CLIENT: 'node-redis', ...env } });
  return { code, out: out.text, err: err.text };
}

describe('tool-receipts on node-redis', () => {
  it('lists, shows and counts the receipts ioredis wrote, with the same flags', async () => {
    const store = fixture.store({ prefix: `${fixture.handle().prefix}:cli` });
    const key = freshKey();
    const attempt = await makeAmbiguous(store, key);
    const url = fixture.handle().url;
    const listed = await cli(['ambiguous', '--json', '--redis', url, '--prefix', store.prefix]);
    expect(listed.err).toBe('');
    expect(listed.code).toBe(0);
    expect((JSON.parse(listed.out) as { receipts: { redisKey: string }[] }).receipts.map((r) => r.redisKey)).toEqual([store.redisKey(key)]);
    const shown = await cli(['show', store.redisKey(key), '--json', '--redis', url, '--prefix', store.prefix]);
    expect(shown.code).toBe(0);
    expect(JSON.parse(shown.out)).toMatchObject({ status: 'running', attempts: attempt, redisKey: store.redisKey(key) });
    const stats = await cli(['stats', '--json', '--redis', url, '--prefix', store.prefix]);
    expect(stats.code).toBe(0);
    expect(JSON.parse(stats.out)).toMatchObject({ total: 1, ambiguous: 1 });
  });

  it('says it cannot reach a server that does not answer, as with ioredis', async () => {
    const run = await cli(['stats', '--redis', 'redis://:secret@127.0.0.1:1']);
    expect(run.code).toBe(1);
    expect(run.err).toMatch(/^tool-receipts: cannot reach Redis at redis:\/\/:\*\*\*@127\.0\.0\.1:1: /);
    expect(run.err).not.toContain('secret');
  });

  it('refuses an unknown TOOL_RECEIPTS_CLIENT', async () => {
    const run = await cli(['stats', '--redis', fixture.handle().url], { TOOL_RECEIPTS_CLIENT: 'redis-py' });
    expect(run.code).toBe(2);
    expect(run.err).toMatch(/TOOL_RECEIPTS_CLIENT must be ioredis or node-redis/);
  });

  it.skipIf(clusterSkipReason() !== undefined)(
    'finds ambiguous receipts on every master of a Cluster with --cluster',
    async () => {
      const cluster = await startRedisCluster(3);
      try {
        const { ReceiptStore } = await import('../../src/redis/receipts/store.js');
        const store = new ReceiptStore({ redis: cluster.connect(), prefix: cluster.prefix });
        // Six random keys all on one master is a 1-in-243 chance: keys are drawn until they span two.
        const keys = Array.from({ length: 6 }, () => freshKey());
        const ownersOf = async () => new Set(await Promise.all(keys.map((k) => cluster.ownerOf(store.redisKey(k)))));
        while ((await ownersOf()).size < 2 && keys.length < 60) keys.push(freshKey());
        for (const key of keys) await makeAmbiguous(store, key, { flag: false });
        expect((await ownersOf()).size).toBeGreaterThan(1);
        const run = await cli(['ambiguous', '--json', '--cluster', '--redis', cluster.nodes[1]!.url, '--prefix', cluster.prefix]);
        expect(run.err).toBe('');
        const listed = (JSON.parse(run.out) as { receipts: { redisKey: string }[] }).receipts.map((r) => r.redisKey).sort();
        expect(listed).toEqual(keys.map((k) => store.redisKey(k)).sort());
      } finally {
        await cluster.stop();
      }
    },
    90_000,
  );
});
