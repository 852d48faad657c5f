/**
 * The client hears its jobs' ends through the `QueueEvents` it is given: one
 * of another queue or prefix never hears them, so it is refused when the
 * client is made instead of leaving every submit waiting. An end whose
 * event never arrives is still seen: the client looks at its job too.
 */
import { Queue, QueueEvents } from 'bullmq';
import { describe, expect, it } from 'vitest';
import { createToolCallClient, MismatchedQueueEventsError } from '../../src/client/index.js';
import { useLanes } from '../bullmq/fixture.js';
import { clientOn, fixtureTools, useOwnConnections } from './support.js';

const lane = useLanes();
const open = useOwnConnections();

const refusal = (make: () => unknown): unknown => {
  try {
    make();
  } catch (e) {
    return e;
  }
  return undefined;
};

describe('createToolCallClient and its QueueEvents', () => {
  it('refuses a QueueEvents of another queue, naming both, and enqueues nothing', async () => {
    const l = await lane();
    const events = open(l, (connection) => new QueueEvents('tool-calls-v2', { connection, prefix: l.prefix }));
    const error = refusal(() => createToolCallClient({ queue: l.queue, queueEvents: events }));
    expect(error).toBeInstanceOf(MismatchedQueueEventsError);
    expect(error).toMatchObject({
      code: 'client.mismatched_events',
      queue: { name: 'tools', prefix: l.prefix },
      queueEvents: { name: 'tool-calls-v2', prefix: l.prefix },
    });
    expect((error as Error).message).toContain('queue "tools"');
    expect((error as Error).message).toContain('queue "tool-calls-v2"');
    expect(await l.queue.getJobCounts()).toMatchObject({ waiting: 0, active: 0, completed: 0 });
  });

  it('refuses a QueueEvents of the same queue under another prefix, naming both prefixes', async () => {
    const l = await lane();
    // The prefix given to the Queue and forgotten on the QueueEvents: BullMQ's default then.
    const events = open(l, (connection) => new QueueEvents(l.queueName, { connection }));
    const error = refusal(() => createToolCallClient({ queue: l.queue, queueEvents: events }));
    expect(error).toMatchObject({
      code: 'client.mismatched_events',
      queue: { name: l.queueName, prefix: l.prefix },
      queueEvents: { name: l.queueName, prefix: 'bull' },
    });
    expect((error as Error).message).toContain(`prefix "${l.prefix}"`);
    expect((error as Error).message).toContain('prefix "bull"');
  });

  it('takes a QueueEvents of the same queue made on its own connection, a left-out prefix read as BullMQ reads it', async () => {
    const l = await lane();
    const queue = open(l, (connection) => new Queue(`edges-${l.prefix}`, { connection, prefix: 'bull' }));
    const events = open(l, (connection) => new QueueEvents(`edges-${l.prefix}`, { connection }));
    expect(() => createToolCallClient({ queue, queueEvents: events })).not.toThrow();

    // And the lane's own pair, on separate connections, runs a turn to its end.
    const mine = open(l, (connection) => new QueueEvents(l.queueName, { connection, prefix: l.prefix }));
    const { tools, runs } = fixtureTools();
    l.worker({ tools });
    const results = await clientOn(l, { queueEvents: mine, timeoutMs: 30_000 }).submit({
      tenantId: 'acme',
      runId: 'run-1',
      turnId: 't-1',
      calls: [{ id: 'c1', name: 'lookup_order', input: { order_id: 'A-1' } }],
    });
    expect(results).toEqual([expect.objectContaining({ tool_use_id: 'c1', outcome: 'executed' })]);
    expect(runs.lookup_order).toBe(1);
  });

  it('sees its job end within a few seconds when its QueueEvents delivers no event (it looks at the job every 5 s)', async () => {
    const l = await lane();
    // A QueueEvents that is ready but never reads the stream: every event is lost, as when BullMQ resets its read.
    const deaf = open(l, (connection) => new QueueEvents(l.queueName, { connection, prefix: l.prefix, autorun: false }));
    const { tools, runs } = fixtureTools();
    l.worker({ tools });
    const startedMs = performance.now();
    const results = await clientOn(l, { queueEvents: deaf, timeoutMs: 45_000 }).submit({
      tenantId: 'acme',
      runId: 'run-deaf',
      turnId: 't-deaf',
      calls: [{ id: 'c1', name: 'lookup_order', input: { order_id: 'A-2' } }],
    });
    expect(results).toEqual([expect.objectContaining({ tool_use_id: 'c1', outcome: 'executed' })]);
    expect(runs.lookup_order).toBe(1);
    // Well before the 45 s timeout's last look: a look every 5 s found it.
    expect(performance.now() - startedMs).toBeLessThan(30_000);
  });
});
