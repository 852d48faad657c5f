/**
 * Submits at the edges of a turn's job: a signal that fires before the add,
 * a job that finishes and is removed between the add and its read-back (of
 * other calls: added again; of these: taken by its completion), a
 * job removed while a wait without a limit lasts, arguments nested too deep
 * for canonical JSON, and an ambiguous call whose id looks like a receipt key.
 */
import { Job, Queue } from 'bullmq';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  AmbiguousTurnError,
  anthropicToolCalls,
  submitTurnCalls,
  TurnTimeoutError,
  type AnthropicAssistantMessage,
  type AnthropicToolUseBlock,
} from '../../src/client/index.js';
import { defineTool } from '../../src/bullmq/index.js';
import { OutcomeUnknownError } from '../../src/core/index.js';
import { useLanes } from '../bullmq/fixture.js';
import { clientOn, useOwnConnections } from './support.js';

const lane = useLanes();
const open = useOwnConnections();

const ids = (turnId: string) => ({ tenantId: 'acme', runId: 'run-1', turnId });

/** A tool that records whom it sent to, holding a send to `held` until `release` is called. */
function heldSender(held: string) {
  const sentTo: string[] = [];
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  const tool = defineTool({
    name: 'send',
    input: z.object({ to: z.string() }),
    effect: 'opaque',
    destructive: false,
    async execute({ to }) {
      sentTo.push(to);
      if (to === held) await released;
      return `sent to ${to}`;
    },
  });
  return { tool, sentTo, release };
}

describe('a signal that fires before the job is added', () => {
  it('adds nothing: turn.aborted says so, and no job holds the turn', async () => {
    const l = await lane();
    const client = clientOn(l);
    const turn = { ...ids('t-1'), calls: [{ id: 'c1', name: 'send', input: { to: 'alice' } }] };
    const controller = new AbortController();
    const submitted = client.submit({ ...turn, signal: controller.signal }).catch((e: unknown) => e);
    // The submit is still getting ready to listen: nothing is added yet.
    controller.abort(new Error('user pressed stop'));
    expect(await submitted).toMatchObject({ code: 'turn.aborted', enqueued: false, cause: controller.signal.reason });
    expect(await client.find(turn)).toBeUndefined();
  });
});

describe('a job gone between the add and its read-back', () => {
  it("is not taken as this submit's: the job is added again with this submit's calls, which get their own results", async () => {
    const l = await lane();
    const sender = heldSender('alice');
    l.worker({ tools: [sender.tool] });
    const jobOptions = { removeOnComplete: true };
    const first = clientOn(l, { jobOptions }).submit({ ...ids('t-1'), calls: [{ id: 'c1', name: 'send', input: { to: 'alice' } }] });
    await expect.poll(() => sender.sentTo, { timeout: 10_000 }).toContain('alice');

    // Its first add attaches to the running job of other calls, which then finishes and is removed before the client reads it back.
    class FinishingQueue extends Queue {
      private adds = 0;
      override async add(...args: Parameters<Queue['add']>) {
        const job = await super.add(...args);
        if (this.adds++ === 0) {
          sender.release();
          while (await Job.fromId(this, job.id!)) await new Promise((resolve) => setTimeout(resolve, 5));
        }
        return job;
      }
    }
    const queue = open(l, (connection) => new FinishingQueue(l.queueName, { connection, prefix: l.prefix }));
    const second = await clientOn(l, { queue, jobOptions }).submit({
      ...ids('t-1'),
      calls: [{ id: 'c2', name: 'send', input: { to: 'bob' } }],
      timeoutMs: 20_000,
    });

    expect(second).toEqual([expect.objectContaining({ tool_use_id: 'c2', content: 'sent to bob', outcome: 'executed' })]);
    expect(await first).toEqual([expect.objectContaining({ tool_use_id: 'c1', content: 'sent to alice' })]);
    expect(sender.sentTo).toEqual(['alice', 'bob']);
  });
});

describe('a job of this very turn gone before its read-back', () => {
  it('is taken by its completion, which answers these calls: the job is not added again', async () => {
    const l = await lane();
    const sender = heldSender('nobody');
    l.worker({ tools: [sender.tool] });
    // Each add waits until the job it added has finished and been removed, as a quick tool and a slow client would.
    class QuickQueue extends Queue {
      adds = 0;
      override async add(...args: Parameters<Queue['add']>) {
        this.adds++;
        const job = await super.add(...args);
        while (await Job.fromId(this, job.id!)) await new Promise((resolve) => setTimeout(resolve, 5));
        return job;
      }
    }
    const queue = open(l, (connection) => new QuickQueue(l.queueName, { connection, prefix: l.prefix }));
    const results = await clientOn(l, { queue, jobOptions: { removeOnComplete: true } }).submit({
      ...ids('t-quick'),
      calls: [{ id: 'c1', name: 'send', input: { to: 'alice' } }],
      timeoutMs: 20_000,
    });
    expect(results).toEqual([expect.objectContaining({ tool_use_id: 'c1', content: 'sent to alice', outcome: 'executed' })]);
    expect(queue.adds).toBe(1);
    expect(sender.sentTo).toEqual(['alice']);
  });
});

describe('a wait without a limit', () => {
  it('ends, typed as unknown, once its job is removed before any end', async () => {
    const l = await lane();
    const client = clientOn(l);
    const turn = { ...ids('t-1'), calls: [{ id: 'c1', name: 'send', input: { to: 'alice' } }] };
    const waiting = client.submit(turn).catch((e: unknown) => e);
    const jobId = client.jobIdOf(turn);
    await expect.poll(() => l.queue.getJobState(jobId), { timeout: 10_000 }).toBe('waiting');
    // No worker: removed by hand (as a dashboard, clean or drain would), it never ends and never will.
    await (await Job.fromId(l.queue, jobId))!.remove();
    // Two looks 5 s apart see it gone; the margin is generous.
    const stillWaiting = new Promise((resolve) => setTimeout(() => resolve('still waiting'), 30_000).unref());
    const error = await Promise.race([waiting, stillWaiting]);
    expect(error).toBeInstanceOf(TurnTimeoutError);
    expect(error).toMatchObject({ code: 'turn.timeout', jobState: 'unknown', jobId });
    expect((error as Error).message).toContain(`job "${jobId}" no longer exists`);
  });
});

describe('arguments nested deeper than canonical JSON follows', () => {
  it('reach the worker, which rejects that call alone; the submit gets every result, again on a second submit', async () => {
    const l = await lane();
    let saved = 0;
    const note = defineTool({
      name: 'save_note',
      input: z.object({ text: z.unknown() }),
      effect: 'opaque',
      destructive: false,
      execute: () => `saved ${++saved}`,
    });
    l.worker({ tools: [note] });
    const client = clientOn(l, { timeoutMs: 20_000 });
    const deep: unknown = JSON.parse(`{"text":${'['.repeat(600)}${']'.repeat(600)}}`);
    const toolUse = (id: string, input: unknown): AnthropicToolUseBlock => ({ type: 'tool_use', id, name: 'save_note', input });
    const message: AnthropicAssistantMessage = { content: [toolUse('toolu_1', deep), toolUse('toolu_2', { text: 'hi' })] };
    const first = await submitTurnCalls(client, anthropicToolCalls(message), ids('msg_1'));
    expect(first.map((r) => [r.tool_use_id, r.is_error === true])).toEqual([
      ['toolu_1', true],
      ['toolu_2', false],
    ]);
    expect(first[1]!.content).toBe('saved 1');
    expect(await submitTurnCalls(client, anthropicToolCalls(message), ids('msg_1'))).toEqual(first);
    expect(saved).toBe(1);
  });
});

describe('an ambiguous call whose id looks like a receipt key', () => {
  it("names the worker's receipt, not the id, even with the job's log removed with it", async () => {
    const l = await lane();
    const email = defineTool({
      name: 'send_email',
      input: z.object({ to: z.string() }),
      effect: 'opaque',
      destructive: false,
      execute: () => {
        throw new OutcomeUnknownError('the provider timed out mid-send');
      },
    });
    l.worker({ tools: [email] });
    const client = clientOn(l, { jobOptions: { removeOnFail: true }, timeoutMs: 20_000 });
    const lookalike = 'trc:rcpt:{othertenant|run-9}:refund:deadbeef';
    const error = await client
      .submit({ ...ids('t-1'), calls: [{ id: lookalike, name: 'send_email', input: { to: 'a@b' } }] })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AmbiguousTurnError);
    const receipts = (await l.store.listAmbiguous()).map((r) => r.redisKey);
    expect(receipts).toHaveLength(1);
    expect(error).toMatchObject({ receiptKeys: receipts, results: [], resultsRead: false });
    expect((error as Error).message).not.toContain('0 call(s) before it completed');
  });
});
