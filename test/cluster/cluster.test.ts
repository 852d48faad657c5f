/**
 * The stores, the wrapper and the CLI on a real three-node Redis Cluster.
 * Runs are picked so that receipts land on every node; each run's keys must
 * share a node (one hash tag), and every search must visit all masters.
 */
import { randomBytes } from 'node:crypto';
import { Job, Queue, Worker } from 'bullmq';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { ToolCallReceiptKey } from '../../src/core/identity.js';
import { defineTool } from '../../src/bullmq/tools/define-tool.js';
import type { ToolJobResult } from '../../src/bullmq/job-data.js';
import { withToolReceipts } from '../../src/bullmq/processor.js';
import { runCli } from '../../src/cli/cli.js';
import { RedisToolResultStore } from '../../src/offload/redis-store.js';
import { buildToolResultRef } from '../../src/offload/ref.js';
import { toolResultStoreContract } from '../../src/offload/contract/index.js';
import { BreakerStore } from '../../src/redis/receipts/transitions/breaker-store.js';
import { ReceiptReader } from '../../src/redis/receipts/reads/inspect.js';
import { ReceiptStore } from '../../src/redis/receipts/store.js';
import { OpenReceiptIndex } from '../../src/otel/open-receipts.js';
import { Capture } from '../cli/support.js';
import { clusterSkipReason, startRedisCluster, type RedisClusterHandle } from '../support/redis-cluster.js';
import { waitForLeaseExpiry, waitUntil } from '../support/redis-fixture.js';
import { clientKindUnderTest, openCluster, type OpenedClient } from '../support/redis-clients.js';
import type { RedisConnection } from '../../src/redis/connection/connection.js';

const skipReason = clusterSkipReason();
if (skipReason) console.warn(`[redis harness] skipping cluster tests: ${skipReason}`);

describe.skipIf(skipReason !== undefined)('on a three-node Redis Cluster', () => {
  let cluster: RedisClusterHandle;
  /** The stores' Cluster client: the client under test (TEST_REDIS_CLIENT). BullMQ keeps its own ioredis one. */
  let redis: RedisConnection;
  const opened: OpenedClient[] = [];
  const connect = (): RedisConnection => {
    const client = openCluster(clientKindUnderTest(), cluster.nodes[0]!);
    opened.push(client);
    return client.client;
  };
  /** One run per node: a run whose keys the cluster places on that node. */
  let runsByNode: Map<string, string>;

  const keyIn = (runId: string, argsHash = `h${randomBytes(6).toString('hex')}`): ToolCallReceiptKey => ({
    tenantId: 'acme',
    runId,
    toolName: 'send_email',
    argsHash,
  });

  beforeAll(async () => {
    cluster = await startRedisCluster(3);
    redis = connect();
    const probe = new ReceiptStore({ redis, prefix: cluster.prefix });
    runsByNode = new Map();
    for (let i = 0; runsByNode.size < 3; i++) {
      if (i > 500) throw new Error('could not find a run for every node');
      const runId = `run-${i}`;
      const node = await cluster.ownerOf(probe.runIndexKey('acme', runId));
      if (!runsByNode.has(node)) runsByNode.set(node, runId);
    }
  }, 60_000);

  afterAll(async () => {
    await Promise.all(opened.map((c) => c.close()));
    await cluster?.stop();
  });

  it('keeps every key of a run on one node, and runs spread over all nodes', async () => {
    const store = new ReceiptStore({ redis, prefix: cluster.prefix });
    const breaker = new BreakerStore({ redis, prefix: cluster.prefix });
    for (const [node, runId] of runsByNode) {
      const key = keyIn(runId);
      expect(await cluster.ownerOf(store.redisKey(key))).toBe(node);
      expect(await cluster.ownerOf(breaker.redisKey('acme', runId))).toBe(node);
    }
    expect(new Set(runsByNode.keys()).size).toBe(3);
  });

  it('claims, waits, completes and replays on every node', async () => {
    const store = new ReceiptStore({ redis, prefix: cluster.prefix });
    for (const runId of runsByNode.values()) {
      const key = keyIn(runId);
      const first = await store.claim(key, { effect: 'opaque' });
      expect(first.decision.kind).toBe('execute');
      expect((await store.claim(key, { effect: 'opaque' })).decision.kind).toBe('wait');
      await store.complete(key, first.fence!, { content: `done in ${runId}` });
      const again = await store.claim(key, { effect: 'opaque' });
      expect(again.decision.kind).toBe('replay');
      expect(again.result).toEqual({ content: `done in ${runId}` });
      const listed = await store.listRun('acme', runId);
      expect(listed.map((r) => r.redisKey)).toContain(store.redisKey(key));
    }
  });

  it('group-commits per slot: calls of many runs on every node at once, each batch on the node of its slot', async () => {
    const store = new ReceiptStore({ redis, prefix: cluster.prefix });
    const keys = [
      ...[...runsByNode.values()].flatMap((runId) => Array.from({ length: 20 }, () => keyIn(runId))),
      ...Array.from({ length: 30 }, () => keyIn(`spread-${randomBytes(4).toString('hex')}`)),
    ];
    const claims = await Promise.all(keys.map((key) => store.claim(key, { effect: 'opaque' })));
    expect(claims.map((c) => c.decision.kind)).toEqual(keys.map(() => 'execute'));
    await Promise.all(claims.map((claim, i) => store.complete(keys[i]!, claim.fence!, { n: i })));
    // The calls of one run meet in a tick, so they are batched; a cross-slot batch would have been refused.
    expect(store.groupCommitted.batches).toBeGreaterThan(0);
    const records = await store.inspectRedisKeys(keys.map((key) => store.redisKey(key)));
    expect(records.map((r) => [r?.status, r?.result])).toEqual(keys.map((_, i) => ['completed', { n: i }]));
  });

  it('reads receipts of several nodes in one call', async () => {
    const store = new ReceiptStore({ redis, prefix: `${cluster.prefix}:many` });
    const keys = [...runsByNode.values()].map((runId) => keyIn(runId));
    for (const key of keys) await store.claim(key, { effect: 'resumable' });
    const reader = new ReceiptReader(redis, store.prefix);
    const missing = store.redisKey(keyIn([...runsByNode.values()][0]!));
    const records = await reader.inspectMany([...keys.map((k) => store.redisKey(k)), missing]);
    expect(records.map((r) => r?.status ?? null)).toEqual(['running', 'running', 'running', null]);
  });

  it('counts breaker failures per run and removes the tool at the limit, on every node', async () => {
    const breaker = new BreakerStore({ redis, prefix: `${cluster.prefix}:brk`, maxFailures: 2 });
    for (const runId of runsByNode.values()) {
      const reason = 'removed after failures';
      expect((await breaker.recordFailure('acme', runId, 'flaky', { removeNow: false, reason })).removed).toBe(false);
      expect((await breaker.recordFailure('acme', runId, 'flaky', { removeNow: false, reason })).removedNow).toBe(true);
    }
  });

  it('finds ambiguous receipts on every master, in the store and in the CLI', async () => {
    const prefix = `${cluster.prefix}:amb`;
    const store = new ReceiptStore({ redis, prefix });
    const keys = [...runsByNode.values()].map((runId) => keyIn(runId));
    for (const key of keys) {
      expect((await store.claim(key, { effect: 'opaque', leaseMs: 60 })).decision.kind).toBe('execute');
    }
    for (const key of keys) await waitForLeaseExpiry(store, key);
    const found = await store.listAmbiguous({ count: 10 });
    expect(found.map((r) => r.redisKey).sort()).toEqual(keys.map((k) => store.redisKey(k)).sort());
    // A client that has not yet learnt the cluster's nodes must still search them all.
    const fresh = new ReceiptStore({ redis: connect(), prefix });
    const foundFresh = await fresh.listAmbiguous({ count: 10 });
    expect(foundFresh.map((r) => r.redisKey).sort()).toEqual(keys.map((k) => store.redisKey(k)).sort());

    const node = cluster.nodes[1]!;
    const out = new Capture();
    const err = new Capture();
    const code = await runCli(['ambiguous', '--json', '--cluster', '--redis', node.url, '--prefix', prefix], {
      stdout: out,
      stderr: err,
      env: {},
    });
    expect(err.text).toBe('');
    expect(code).toBe(0);
    const listed = (JSON.parse(out.text) as { receipts: { redisKey: string }[] }).receipts.map((r) => r.redisKey).sort();
    expect(listed).toEqual(keys.map((k) => store.redisKey(k)).sort());
  });

  it('counts receipts of every master with stats, and the open-receipt index counts its ambiguous ones', async () => {
    const prefix = `${cluster.prefix}:stats`;
    const store = new ReceiptStore({ redis, prefix });
    const index = new OpenReceiptIndex(redis, store, 4);
    const lapsing = [...runsByNode.values()].map((runId) => keyIn(runId));
    for (const runId of runsByNode.values()) {
      const done = keyIn(runId);
      const { fence } = await store.claim(done, { effect: 'resumable' });
      await store.complete(done, fence!, 'ok');
    }
    for (const key of lapsing) {
      await store.claim(key, { effect: 'opaque', leaseMs: 60 });
      index.add(store.redisKey(key));
    }
    for (const key of lapsing) await waitForLeaseExpiry(store, key);
    const stats = await store.stats({ count: 10 });
    expect(stats).toMatchObject({ runs: 3, total: 6, ambiguous: 3, byStatus: { running: 3, completed: 3, failed: 0 } });
    expect(stats.byStatusAndEffect).toEqual([
      { status: 'completed', effect: 'resumable', count: 3 },
      { status: 'running', effect: 'opaque', count: 3 },
    ]);
    expect(await index.countAmbiguous()).toBe(3);
  });

  describe('offload store contract', () => {
    let stores = 0;
    for (const c of toolResultStoreContract()) {
      it(c.name, async (ctx) => {
        // A fresh prefix per case: deleteBySession counts unowned entries store-wide.
        const makeStore = () => new RedisToolResultStore({ redis, prefix: `${cluster.prefix}:off${++stores}` });
        if ((await c.run(makeStore)) === 'skipped') ctx.skip();
      });
    }
  });

  it('deletes one session’s offloaded results from every node', async () => {
    const store = new RedisToolResultStore({ redis, prefix: `${cluster.prefix}:sweep` });
    const sessions = Array.from({ length: 12 }, (_, i) => `session-${i}`);
    const doomed = sessions.map((sessionId) => buildToolResultRef(sessionId, 'toolu_1'));
    const kept = sessions.map((sessionId) => buildToolResultRef(sessionId, 'toolu_2'));
    for (const [i, sessionId] of sessions.entries()) {
      // Owned by another session than the one the ref names, as a sub-agent's results are.
      await store.put(doomed[i]!, `text of ${sessionId}`, { sessionId: 'doomed' });
      await store.put(kept[i]!, 'kept', { sessionId });
    }
    const nodes = new Set(await Promise.all(doomed.map((ref) => cluster.ownerOf(store.hashKeyOf(ref)))));
    expect(nodes.size).toBe(3);
    expect((await store.deleteBySession('doomed')).deleted).toBe(sessions.length);
    for (const ref of doomed) expect(await store.get(ref)).toBeUndefined();
    for (const [i, ref] of kept.entries()) expect(await store.ownerOf(ref)).toEqual({ sessionId: sessions[i] });
  });

  it('runs each effect once when the same call arrives as two jobs on two BullMQ workers', async () => {
    const effects = new Map<string, number>();
    const tool = defineTool({
      name: 'send_email',
      input: z.object({ to: z.string() }),
      effect: 'opaque',
      execute: ({ to }) => {
        effects.set(to, (effects.get(to) ?? 0) + 1);
        return `sent to ${to}`;
      },
    });
    // BullMQ on a cluster needs its own hash tag in the prefix, so a queue's keys share a slot.
    const bullPrefix = `{${cluster.prefix}-bull}`;
    const queueName = 'tools';
    const bull = cluster.connect({ maxRetriesPerRequest: null });
    const queue = new Queue(queueName, { connection: bull, prefix: bullPrefix });
    const workers = [0, 1].map(() => {
      const processor = withToolReceipts({ redis, tools: [tool], prefix: `${cluster.prefix}:wrap`, logger: pino({ level: 'silent' }) });
      const worker = new Worker(queueName, processor, { connection: bull, prefix: bullPrefix, concurrency: 4 });
      processor.attach(worker);
      return worker;
    });
    try {
      const jobs: Job[] = [];
      for (const runId of runsByNode.values()) {
        const data = { tenantId: 'acme', runId, calls: [{ id: `toolu_${runId}`, name: 'send_email', input: { to: `${runId}@x.test` } }] };
        jobs.push(await queue.add('call', data), await queue.add('call', data));
      }
      // Read from the jobs themselves, not QueueEvents: a stream read held up on a loaded machine can be
      // reset by BullMQ's watchdog, and a failure here then says where each job stands.
      const finished = await waitUntil(
        () => Promise.all(jobs.map(async (job) => ({ id: job.id, state: await queue.getJobState(job.id!) }))),
        (states) => states.every(({ state }) => state === 'completed' || state === 'failed'),
        60_000,
        'every job to finish (each job id and its state)',
      );
      expect(finished.map(({ state }) => state)).toEqual(jobs.map(() => 'completed'));
      const results = (await Promise.all(jobs.map(async (job) => (await Job.fromId(queue, job.id!))!.returnvalue))) as ToolJobResult[];
      expect([...effects.values()]).toEqual([1, 1, 1]);
      const outcomes = results.map((r) => r.results[0]!.outcome).sort();
      expect(outcomes).toEqual(['executed', 'executed', 'executed', 'replayed', 'replayed', 'replayed']);
    } finally {
      await Promise.all(workers.map((w) => w.close()));
      await queue.close();
    }
  }, 90_000);
});
