/**
 * A turn's calls run one after another: each complete claims the next call in
 * the same script. The next call must get exactly the decision a claim of its
 * own would give (replay, wait, a removed tool, ambiguous), be claimed ahead
 * only when a claim of its own would be made now, and an attempt claimed
 * ahead for a call the job then does not run must never start its effect.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { REJECTION_REMOVAL_SUFFIX, toolCallArgsHash } from '../../src/core/index.js';
import { NOOP_OBSERVER, defineTool, type ToolCallObserver, type ToolJobResult } from '../../src/bullmq/index.js';
import { waitForLeaseExpiry } from '../support/redis-fixture.js';
import { call, jobData, useLanes } from './fixture.js';

const lane = useLanes();
const results = (job: { returnvalue: unknown }) => (job.returnvalue as ToolJobResult).results.map((r) => [r.outcome, r.content]);

/** An opaque tool taking `{ n }` that counts its runs; `gate`, when given, holds each run until it resolves. */
function countingTool(name: string, gate?: { entered: () => void; open: Promise<void> }) {
  let runs = 0;
  const tool = defineTool({
    name,
    input: z.object({ n: z.number() }),
    effect: 'opaque',
    destructive: false,
    async execute({ n }) {
      runs++;
      if (gate) {
        gate.entered();
        await gate.open;
      }
      return `${name} ${n}`;
    },
  });
  return { tool, runs: () => runs };
}

/** An observer that records, per call in order, its decision and the round trips it made. */
function recorder() {
  const calls: { tool: string; decision?: string; attempt?: number; roundTrips: string[] }[] = [];
  const observer: ToolCallObserver = {
    callStarted(started) {
      const seen: (typeof calls)[number] = { tool: started.tool, roundTrips: [] };
      calls.push(seen);
      return {
        ...NOOP_OBSERVER.callStarted(started),
        decided: (d) => {
          seen.decision = d.decision;
          seen.attempt = d.attempt;
        },
        roundTrip: (name, fn) => {
          seen.roundTrips.push(name);
          return fn();
        },
      };
    },
  };
  return { observer, take: () => calls.splice(0) };
}

describe('a complete that claims the next call of the turn', () => {
  it('replays a next call that already completed, without a claim of its own', async () => {
    const l = await lane();
    const send = countingTool('send_email');
    const ticket = countingTool('create_ticket');
    const seen = recorder();
    l.worker({ tools: [send.tool, ticket.tool], telemetry: seen.observer });
    const ids = { runId: 'run-replay-next' };
    expect(results(await l.run(jobData([call('create_ticket', { n: 1 })], ids)))).toEqual([['executed', 'create_ticket 1']]);
    seen.take();
    const job = await l.run(jobData([call('send_email', { n: 1 }), call('create_ticket', { n: 1 })], ids));
    expect(results(job)).toEqual([
      ['executed', 'send_email 1'],
      ['replayed', 'create_ticket 1'],
    ]);
    expect(seen.take()).toEqual([
      { tool: 'send_email', decision: 'execute', attempt: 1, roundTrips: ['claim', 'completeAndClaim'] },
      { tool: 'create_ticket', decision: 'replay', attempt: undefined, roundTrips: [] },
    ]);
    expect([send.runs(), ticket.runs()]).toEqual([1, 1]);
  });

  it('waits on a next call another worker holds, then replays what that worker completed', async () => {
    const l = await lane();
    let entered = () => {};
    const held = new Promise<void>((resolve) => (entered = resolve));
    let open = () => {};
    const gate = { entered, open: new Promise<void>((resolve) => (open = resolve)) };
    const send = countingTool('send_email');
    const ticket = countingTool('create_ticket', gate);
    const seen = recorder();
    const options = { tools: [send.tool, ticket.tool], telemetry: seen.observer, maxWaitMs: 100, waitJitterMs: 10 };
    // One job at a time per worker: while the first holds the ticket, the turn runs on the other.
    l.worker(options, { concurrency: 1 });
    l.worker(options, { concurrency: 1 });
    const ids = { runId: 'run-wait-next' };
    const holder = await l.add(jobData([call('create_ticket', { n: 1 })], ids));
    await held;
    const turn = await l.add(jobData([call('send_email', { n: 1 }), call('create_ticket', { n: 1 })], ids));
    await expect.poll(() => turn.getState(), { timeout: 10_000 }).toBe('delayed');
    const waited = seen.take().filter((c) => c.tool === 'create_ticket' && c.decision === 'wait');
    expect(waited).toEqual([{ tool: 'create_ticket', decision: 'wait', attempt: undefined, roundTrips: [] }]);
    open();
    expect(results(await l.settle(holder))).toEqual([['executed', 'create_ticket 1']]);
    expect(results(await l.settle(turn))).toEqual([
      ['replayed', 'send_email 1'],
      ['replayed', 'create_ticket 1'],
    ]);
    expect([send.runs(), ticket.runs()]).toEqual([1, 1]);
  });

  it('refuses a next call whose tool the run removed, and writes no receipt for it', async () => {
    const l = await lane();
    const send = countingTool('send_email');
    const ticket = countingTool('create_ticket');
    const seen = recorder();
    const { processor } = l.worker({ tools: [send.tool, ticket.tool], telemetry: seen.observer });
    const data = jobData([call('send_email', { n: 1 }), call('create_ticket', { n: 1 })]);
    await processor.breaker.recordFailure(data.tenantId, data.runId, 'create_ticket', {
      removeNow: true,
      reason: 'create_ticket was removed.',
    });
    const job = await l.run(data);
    expect(results(job)).toEqual([
      ['executed', 'send_email 1'],
      ['rejected', `create_ticket was removed. ${REJECTION_REMOVAL_SUFFIX}`],
    ]);
    expect(seen.take().map((c) => c.roundTrips)).toEqual([['claim', 'completeAndClaim'], []]);
    expect((await l.store.listRun(data.tenantId, data.runId)).map((r) => r.key.toolName)).toEqual(['send_email']);
    expect(ticket.runs()).toBe(0);
  });

  it('finds a next call whose opaque attempt lost its lease ambiguous, flags it, and does not run it', async () => {
    const l = await lane();
    const send = countingTool('send_email');
    const ticket = countingTool('create_ticket');
    const seen = recorder();
    l.worker({ tools: [send.tool, ticket.tool], telemetry: seen.observer, onAmbiguous: 'report' });
    const data = jobData([call('send_email', { n: 1 }), call('create_ticket', { n: 1 })]);
    const lost = { tenantId: data.tenantId, runId: data.runId, toolName: 'create_ticket', argsHash: await toolCallArgsHash({ n: 1 }) };
    await l.store.claim(lost, { effect: 'opaque', leaseMs: 50, owner: 'a worker that died' });
    await waitForLeaseExpiry(l.store, lost);
    const job = await l.run(data);
    expect(results(job).map(([outcome]) => outcome)).toEqual(['executed', 'ambiguous']);
    // The complete's answer needed one more command, flagging the attempt: made and observed as the call's claim.
    expect(seen.take().map((c) => [c.decision, c.roundTrips])).toEqual([
      ['execute', ['claim', 'completeAndClaim']],
      ['ambiguous', ['claim']],
    ]);
    expect(await l.store.inspect(lost)).toMatchObject({ status: 'running', attempts: 1, ambiguousMs: expect.any(Number) });
    expect(ticket.runs()).toBe(0);
  });

  it("side by side: one call sends the group's claim as its round trip; the others make none", async () => {
    const l = await lane();
    const send = countingTool('send_email');
    const seen = recorder();
    l.worker({ tools: [send.tool], telemetry: seen.observer });
    const data = { ...jobData([1, 2, 3].map((n) => call('send_email', { n }))), parallel: true };
    expect(results(await l.run(data)).map(([outcome]) => outcome)).toEqual(['executed', 'executed', 'executed']);
    const trips = seen
      .take()
      .map((c) => c.roundTrips.join('+'))
      .sort();
    expect(trips).toEqual(['claimGroup+complete', 'complete', 'complete']);
    expect(send.runs()).toBe(3);
  });

  it('claims no next call that would take no claim: a read-only tool, or input that is rejected', async () => {
    const l = await lane();
    const send = countingTool('send_email');
    let lookups = 0;
    const lookup = defineTool({
      name: 'lookup',
      input: z.object({ q: z.string() }),
      effect: 'opaque',
      readOnly: true,
      execute: () => `found ${++lookups}`,
    });
    const seen = recorder();
    l.worker({ tools: [send.tool, lookup], telemetry: seen.observer });
    const job = await l.run(
      jobData([call('send_email', { n: 1 }), call('lookup', { q: 'x' }), call('send_email', { n: 2 }), call('send_email', { n: 'two' })]),
    );
    expect(results(job).map(([outcome]) => outcome)).toEqual(['executed', 'executed', 'executed', 'rejected']);
    expect(seen.take().map((c) => [c.tool, c.decision, c.roundTrips])).toEqual([
      ['send_email', 'execute', ['claim', 'complete']],
      ['lookup', 'direct', []],
      ['send_email', 'execute', ['claim', 'complete']],
      ['send_email', undefined, []],
    ]);
  });

  it('completes the current call when staging the next one throws; the next call then fails with that error', async () => {
    const l = await lane();
    const send = countingTool('send_email');
    const seen = recorder();
    // A digest that fails for one input, as an unreachable key service would.
    const digest = (canonical: string) => {
      if (canonical.includes('999')) throw new Error('digest service unreachable');
      return canonical;
    };
    l.worker({ tools: [send.tool], telemetry: seen.observer, digest });
    const data = jobData([call('send_email', { n: 1 }), call('send_email', { n: 999 })]);
    const job = await l.run(data, { attempts: 1 });
    expect(job.failedReason).toMatch(/digest service unreachable/);
    expect(seen.take().map((c) => [c.decision, c.roundTrips])).toEqual([
      ['execute', ['claim', 'complete']],
      [undefined, []],
    ]);
    expect((await l.store.listRun(data.tenantId, data.runId)).map((r) => [r.key.toolName, r.status])).toEqual([
      ['send_email', 'completed'],
    ]);
    expect(send.runs()).toBe(1);
  });

  it('releases an attempt claimed ahead when the job stops before running it: never started, and run once by the next delivery', async () => {
    const l = await lane();
    const send = countingTool('send_email');
    const ticket = countingTool('create_ticket');
    const { processor, worker } = l.worker({ tools: [send.tool, ticket.tool] });
    let interrupted = false;
    // The lock is lost right after the first call's complete claimed the second.
    processor.events.on('settled', (e) => {
      if (e.tool !== 'send_email' || interrupted) return;
      interrupted = true;
      worker.emit('lockRenewalFailed', [e.jobId!]);
    });
    const decisions: string[] = [];
    processor.events.on('decision', (e) => decisions.push(`${e.tool}:${e.decision}@${e.attempt ?? '-'}`));
    const data = jobData([call('send_email', { n: 1 }), call('create_ticket', { n: 1 })]);
    const job = await l.run(data, { attempts: 2, backoff: { type: 'fixed', delay: 50 } });
    expect(job.attemptsMade).toBe(2);
    expect(results(job)).toEqual([
      ['replayed', 'send_email 1'],
      ['executed', 'create_ticket 1'],
    ]);
    // By name, not position: both receipts can be created in the same millisecond, and the run index then lists them by key.
    const ticketReceipt = (await l.store.listRun(data.tenantId, data.runId)).find((r) => r.key.toolName === 'create_ticket');
    // Attempt 1 was claimed by the complete and released unstarted; attempt 2 ran the effect, once.
    expect(ticketReceipt).toMatchObject({ key: { toolName: 'create_ticket' }, status: 'completed', attempts: 2 });
    expect(decisions).toEqual(['send_email:execute@1', 'send_email:replay@-', 'create_ticket:execute@2']);
    expect([send.runs(), ticket.runs()]).toEqual([1, 1]);
  });
});
