/**
 * Approvals on a real three-node Redis Cluster: calls of runs placed on every
 * node wait, are listed from the prefix's index (a slot of its own), and each
 * runs once when approved; the decisions' audit entries land in the audit
 * stream's own slot.
 */
import { Queue, QueueEvents, Worker, type Job } from 'bullmq';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { approveCall, listPendingApprovals } from '../../src/approvals/index.js';
import { defineTool, withToolReceipts, type ToolJobResult } from '../../src/bullmq/index.js';
import { AuditLog } from '../../src/redis/operators/audit-log.js';
import { ReceiptStore } from '../../src/redis/receipts/store.js';
import { clusterSkipReason, useRedisCluster } from '../support/redis-cluster.js';

const skipReason = clusterSkipReason();
if (skipReason) console.warn(`[redis harness] skipping the approvals cluster test: ${skipReason}`);

describe.skipIf(skipReason !== undefined)('approvals on a three-node Redis Cluster', () => {
  const runningCluster = useRedisCluster();

  it('calls on every node wait, are listed, and each runs once when approved', async () => {
    const cluster = runningCluster();
    const redis = cluster.connect();
    const prefix = `${cluster.prefix}:appr`;
    const probe = new ReceiptStore({ redis, prefix });
    const runs: string[] = [];
    const nodes = new Set<string>();
    for (let i = 0; nodes.size < 3; i++) {
      if (i > 500) throw new Error('could not find a run for every node');
      const node = await cluster.ownerOf(probe.runIndexKey('acme', `run-${i}`));
      if (!nodes.has(node)) (nodes.add(node), runs.push(`run-${i}`));
    }
    const ran: string[] = [];
    const wipe = defineTool({
      name: 'wipe',
      input: z.object({ id: z.string() }),
      effect: 'opaque',
      approval: 'always',
      execute: ({ id }) => (ran.push(id), 'wiped'),
    });
    const bullPrefix = `{${cluster.prefix}-bull}`;
    const bull = cluster.connect({ maxRetriesPerRequest: null });
    const queue = new Queue('tools', { connection: bull, prefix: bullPrefix });
    const events = new QueueEvents('tools', { connection: bull, prefix: bullPrefix });
    const processor = withToolReceipts({ redis, tools: [wipe], prefix, logger: pino({ level: 'silent' }) });
    const worker = new Worker('tools', processor, { connection: bull, prefix: bullPrefix, concurrency: 3 });
    processor.attach(worker);
    try {
      await events.waitUntilReady();
      const jobs: Job[] = [];
      for (const runId of runs)
        jobs.push(
          await queue.add('call', { tenantId: 'acme', runId, calls: [{ id: `toolu_${runId}`, name: 'wipe', input: { id: runId } }] }),
        );
      await expect.poll(async () => (await listPendingApprovals({ redis, prefix })).length, { timeout: 30_000 }).toBe(3);
      expect(ran).toEqual([]);
      for (const pending of await listPendingApprovals({ redis, prefix })) {
        await approveCall({ redis, prefix, ...pending, actor: 'ana', queue });
      }
      const done = await Promise.all(jobs.map((job) => job.waitUntilFinished(events, 30_000) as Promise<ToolJobResult>));
      expect(done.map((r) => r.results.map((b) => b.outcome))).toEqual([['executed'], ['executed'], ['executed']]);
      expect([...ran].sort()).toEqual([...runs].sort());
      expect(await listPendingApprovals({ redis, prefix })).toEqual([]);
      expect((await new AuditLog(redis, prefix).read()).map((a) => a.action)).toEqual(['approve', 'approve', 'approve']);
    } finally {
      await worker.close();
      await Promise.all([queue.close(), events.close()]);
    }
  }, 120_000);
});
