/**
 * The agent's side of approvals, with a real BullMQ worker and Redis:
 * `submit` with `approvals: 'return'` resolves as soon as the job is parked,
 * saying which call awaits approval (not an error), with the results of the
 * calls that already ran and the later ones not answered yet; submitting the same turn again after the decision gives
 * the real results; the default waits for the decision; the AI SDK mapping
 * gives one `tool-approval-request` per awaiting call.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineTool } from '../../src/bullmq/index.js';
import { approveCall, denyCall, listPendingApprovals, type PendingApproval } from '../../src/approvals/index.js';
import {
  aiSdkApprovalRequests,
  anthropicToolCalls,
  awaitingApproval,
  createToolCallClient,
  isTurnAnswered,
} from '../../src/client/index.js';
import { useLanes, type Lane } from '../bullmq/fixture.js';

const lane = useLanes({ queues: 'redis' });

function tools() {
  const runs: string[] = [];
  const note = defineTool({
    name: 'note',
    input: z.object({ text: z.string() }),
    effect: 'opaque',
    execute: ({ text }) => (runs.push(`note ${text}`), `noted ${text}`),
  });
  const refund = defineTool({
    name: 'refund',
    input: z.object({ amount: z.number() }),
    effect: 'opaque',
    approval: (args) => ({ reason: `refund of ${args.amount}` }),
    execute: ({ amount }) => (runs.push(`refund ${amount}`), `refunded ${amount}`),
  });
  return { runs, all: [note, refund] };
}

async function pendingOf(l: Lane): Promise<PendingApproval> {
  const until = Date.now() + 20_000;
  for (;;) {
    const [pending] = await listPendingApprovals({ redis: l.redis, prefix: l.prefix });
    if (pending) return pending;
    if (Date.now() > until) throw new Error('no call became pending');
    await new Promise((r) => setTimeout(r, 50));
  }
}

const message = {
  role: 'assistant',
  content: [
    { type: 'tool_use', id: 'toolu_a', name: 'note', input: { text: 'before' } },
    { type: 'tool_use', id: 'toolu_b', name: 'refund', input: { amount: 250 } },
    { type: 'tool_use', id: 'toolu_c', name: 'note', input: { text: 'after' } },
  ],
} as const;

describe('submit and approvals', () => {
  it("'return': the awaiting call is an outcome of its own, the call before it with its result, the one after pending; after the approval the same turn gives the results", async () => {
    const l = await lane();
    const { runs, all } = tools();
    l.worker({ tools: all });
    const client = createToolCallClient({ queue: l.queue, queueEvents: l.events });
    const turn = anthropicToolCalls(message);
    const ids = { tenantId: 'acme', runId: 'run-1', turnId: 't1' };
    const calls = turn.entries.flatMap((e) => (e.kind === 'call' ? [e.call] : []));

    const parked = await client.submit({ ...ids, calls, approvals: 'return' });
    expect(parked.map((r) => [r.tool_use_id, r.outcome])).toEqual([
      ['toolu_a', 'executed'],
      ['toolu_b', 'awaiting_approval'],
      ['toolu_c', 'pending'],
    ]);
    expect(isTurnAnswered(parked)).toBe(false);
    // The call that already ran comes back with its result, as the same turn's later submit replays it.
    expect(parked[0]).toEqual({ type: 'tool_result', tool_use_id: 'toolu_a', content: 'noted before', outcome: 'executed' });
    const [waiting] = awaitingApproval(parked);
    const pending = await pendingOf(l);
    expect(waiting!.approval).toMatchObject({ receiptKey: pending.receiptKey, reason: 'refund of 250', expiresAtMs: pending.expiresAtMs });
    expect(aiSdkApprovalRequests(turn, parked)).toEqual([
      {
        type: 'tool-approval-request',
        approvalId: pending.receiptKey,
        toolCall: { type: 'tool-call', toolCallId: 'toolu_b', toolName: 'refund', input: { amount: 250 } },
      },
    ]);
    // The call before it ran once; the one after waits with it.
    expect(runs).toEqual(['note before']);

    await approveCall({ redis: l.redis, prefix: l.prefix, ...pending, actor: 'ana', queue: l.queue });
    const answered = await client.submit({ ...ids, calls });
    expect(answered.map((r) => r.outcome)).toEqual(['replayed', 'executed', 'executed']);
    expect(isTurnAnswered(answered)).toBe(true);
    expect(runs).toEqual(['note before', 'refund 250', 'note after']);
  });

  it("the default waits for the decision: a denial comes back as the call's result, never run", async () => {
    const l = await lane();
    const { runs, all } = tools();
    l.worker({ tools: all });
    const client = createToolCallClient({ queue: l.queue, queueEvents: l.events });
    const submitted = client.submit({
      tenantId: 'acme',
      runId: 'run-2',
      turnId: 't1',
      calls: [{ id: 'toolu_r', name: 'refund', input: { amount: 900 } }],
    });
    const pending = await pendingOf(l);
    await denyCall({ redis: l.redis, prefix: l.prefix, ...pending, actor: 'bo', note: 'too much', queue: l.queue });
    const [result] = await submitted;
    expect(result).toMatchObject({ tool_use_id: 'toolu_r', outcome: 'denied', is_error: true });
    expect(result!.content).toContain('"too much"');
    expect(runs).toEqual([]);
  });
});
