/**
 * A worker process is SIGKILLed while an opaque MCP call is in flight (the
 * server has the request and finishes it, but the answer goes nowhere). A
 * second worker process takes the stalled job over through BullMQ's own
 * recovery. The MCP server (over stdio, a child of the worker; over
 * Streamable HTTP, its own process) journals what it received.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { ToolJobResult } from '../../src/bullmq/index.js';
import { call, CRASH_WORKER_TIMING, decisionTrail, expectWaitsThen, jobData, RETRYING, useLanes, type Lane } from '../bullmq/fixture.js';
import { spawnWorkerProcess, type WorkerProcess } from '../support/worker-process.js';
import { journaled, journalPath, readJournal, startHttpServer, type HttpServer } from './support.js';

const lane = useLanes();
const STEP_MS = 30_000;

describe.each<'stdio' | 'http'>(['stdio', 'http'])('a worker SIGKILLed while an opaque MCP call is in flight, over %s', (kind) => {
  const started: Array<{ stop(): Promise<void> }> = [];
  afterEach(async () => {
    for (const s of started.splice(0).reverse()) await s.stop().catch(() => undefined);
  });

  async function setup(env: Record<string, string> = {}) {
    const journal = journalPath();
    // Over stdio each worker spawns its own server (the first one outlives its SIGKILLed worker to finish the
    // call); over HTTP both workers reach one server.
    let server: HttpServer | undefined;
    if (kind === 'http') {
      server = await startHttpServer(journal);
      started.push({ stop: server.kill });
    }
    const l: Lane = await lane();
    const spawn = async () => {
      const w: WorkerProcess = await spawnWorkerProcess('mcp/worker', {
        REDIS_URL: l.redisUrl,
        PREFIX: l.prefix,
        QUEUE: l.queueName,
        MCP_JOURNAL: journal,
        ...(server ? { MCP_URL: server.url.href } : {}),
        ...CRASH_WORKER_TIMING,
        ...env,
      });
      started.push({ stop: () => w.signal('SIGKILL') });
      return w;
    };
    const first = await spawn();
    const data = jobData([call('op_nondestructive', { to: 'i@example.com', holdMs: 300, stubborn: true }, 'toolu_lost')]);
    const job = await l.add(data, RETRYING);
    await journaled(journal, (e) => e.phase === 'received');
    await first.signal('SIGKILL');
    // The server finishes the call; its answer has no one to go to.
    await journaled(journal, (e) => e.phase === 'sent');
    const takeover = await spawn();
    const calls = () => readJournal(journal).filter((e) => e.tool === 'op_nondestructive');
    return { l, data, job, takeover, calls, journal };
  }

  it('without a reconcile: ambiguous, and never sent again', async () => {
    const { l, data, job, takeover, calls } = await setup();
    const done = await l.settle(job, 60_000);
    expect(await done.getState()).toBe('failed');
    expect(done.failedReason).toMatch(/^receipt\.ambiguous/);
    expect(done.attemptsMade).toBe(1);
    await takeover.waitFor((m) => m.type === 'ambiguous', STEP_MS);
    expectWaitsThen(decisionTrail(takeover), 'ambiguous');
    expect(calls().map((e) => e.phase)).toEqual(['received', 'sent']);
    expect(await l.receipt(data.tenantId, data.runId)).toMatchObject({ status: 'running', attempts: 1 });
  });

  it('with a reconcile that asks the server: settled as completed, never sent again', async () => {
    const { l, data, job, takeover, calls, journal } = await setup({ RECONCILE: 'lookup' });
    const done = await l.settle(job, 60_000);
    expect(done.failedReason).toBeUndefined();
    expect(await done.getState()).toBe('completed');
    expect((done.returnvalue as ToolJobResult).results).toMatchObject([
      { tool_use_id: 'toolu_lost', content: 'sent (found by reconcile)' },
    ]);
    await takeover.waitFor((m) => m.type === 'reconcile-asked', STEP_MS);
    // The send once; the reconcile only looked it up.
    expect(calls().map((e) => e.phase)).toEqual(['received', 'sent']);
    expect(readJournal(journal).filter((e) => e.tool === 'lookup' && e.phase === 'received')).toHaveLength(1);
    expect(await l.receipt(data.tenantId, data.runId)).toMatchObject({ status: 'completed', attempts: 1 });
  });
});
