/**
 * `/mastra` with the real Mastra: an `Agent`'s own loop (`generate`), driven
 * by the AI SDK's `MockLanguageModelV3`, runs the tools on `crash-worker`
 * processes (real Redis, real BullMQ), SIGKILLed inside the tool and after
 * an approval; `requireApproval` suspends the run and
 * `approveToolCallGenerate` becomes the receipt's fenced decision.
 */
import { Mastra } from '@mastra/core';
import { Agent } from '@mastra/core/agent';
import { InMemoryStore } from '@mastra/core/storage';
import { describe, expect, it } from 'vitest';
import type { AnyToolDefinition } from '../../src/bullmq/index.js';
import { ambiguousText } from '../../src/bullmq/outcomes/ambiguity.js';
import { FrameworkApprovalRefusedError, mastraReceiptTools } from '../../src/mastra/index.js';
import { EMAIL, reached, scriptedAiSdkModel, STEP_TIMEOUT_MS, useFrameworkLanes, type FrameworkLane } from './support.js';

const lane = useFrameworkLanes();
/** A Mastra with one agent whose tools run on the lane's workers, and its in-memory store of suspended runs. */
function agentWith(f: FrameworkLane, tool: AnyToolDefinition, runId: string) {
  const store = new InMemoryStore();
  const ops = new Agent({
    id: 'ops',
    name: 'ops',
    instructions: 'Help ops.',
    model: scriptedAiSdkModel(),
    tools: mastraReceiptTools([tool], { ...f.options, runId }),
  });
  const mastra = new Mastra({ agents: { ops }, storage: store, logger: false });
  return { agent: mastra.getAgent('ops'), store };
}

const sentResult = JSON.stringify({ sent: true, to: EMAIL.to });

describe('Mastra: Agent.generate with receipt tools', () => {
  it('a worker SIGKILLed inside the tool after its effect: the email went once, the model reads the ambiguous sentence, and a retried turn runs nothing again', async () => {
    const f = await lane();
    const first = await f.lane.spawn({ CRASH_AT: 'after-effect:send' });
    const { agent } = agentWith(f, f.sendEmail, 'thread-crash');
    const running = agent.generate('Tell ops the printer is on fire.');
    await first.waitFor(reached('after-effect:send'), STEP_TIMEOUT_MS);
    await first.signal('SIGKILL');
    await f.lane.spawn();
    expect((await running).text).toBe(`read: ${ambiguousText('send_email')}`);
    expect(await f.sent()).toBe(1);

    const retried = await agentWith(f, f.sendEmail, 'thread-crash').agent.generate('Tell ops the printer is on fire.');
    expect(retried.text).toBe(`read: ${ambiguousText('send_email')}`);
    expect(await f.sent()).toBe(1);
  });

  it('the same turn run again gets the recorded result; the tool does not run', async () => {
    const f = await lane();
    await f.lane.spawn();
    const first = await agentWith(f, f.sendEmail, 'thread-replay').agent.generate('Tell ops the printer is on fire.');
    expect(first.text).toBe(`read: ${sentResult}`);
    const replayed = await agentWith(f, f.sendEmail, 'thread-replay').agent.generate('Tell ops the printer is on fire.');
    expect(replayed.text).toBe(`read: ${sentResult}`);
    expect(await f.sent()).toBe(1);
  });

  it('approveToolCallGenerate runs the call once though the worker dies after it; a retried turn runs nothing again; edited snapshot arguments are refused', async () => {
    const f = await lane();
    const first = await f.lane.spawn({ APPROVAL_TOOLS: 'send_email', CRASH_AT: 'after-approval' });
    const { agent } = agentWith(f, f.sendEmailApproved, 'thread-approval');

    const asked = await agent.generate('Tell ops the printer is on fire.');
    expect(asked.finishReason).toBe('suspended');
    expect(asked.suspendPayload).toMatchObject({ toolCallId: 'call_1', toolName: 'send_email', args: EMAIL });
    expect((await f.pending()).map((p) => p.toolName)).toEqual(['send_email']);
    // Mastra itself refuses an approval for a call that is not suspended.
    await expect(agent.approveToolCallGenerate({ runId: asked.runId!, toolCallId: 'call_other' })).rejects.toThrow(/not suspended/);

    const approving = agent.approveToolCallGenerate({ runId: asked.runId!, toolCallId: 'call_1' });
    await first.waitFor(reached('after-approval'), STEP_TIMEOUT_MS);
    await first.signal('SIGKILL');
    await f.lane.spawn({ APPROVAL_TOOLS: 'send_email' });
    expect((await approving).text).toBe(`read: ${sentResult}`);
    expect(await f.sent()).toBe(1);

    // The turn retried after the decision: Mastra asks its rule again (it cannot know the call ran), and the approval runs nothing.
    const retry = agentWith(f, f.sendEmailApproved, 'thread-approval').agent;
    const suspendedAgain = await retry.generate('Tell ops the printer is on fire.');
    expect(suspendedAgain.finishReason).toBe('suspended');
    expect(await f.pending()).toEqual([]);
    const replayed = await retry.approveToolCallGenerate({ runId: suspendedAgain.runId!, toolCallId: 'call_1' });
    expect(replayed.text).toBe(`read: ${sentResult}`);
    expect(await f.sent()).toBe(1);

    // A suspended run whose snapshot's arguments are edited before the approval: refused, typed; the model reads why.
    const other = agentWith(f, f.sendEmailApproved, 'thread-edited');
    const suspended = await other.agent.generate('Tell ops the printer is on fire.');
    expect(suspended.finishReason).toBe('suspended');
    const workflows = (await other.store.getStore('workflows'))!;
    const where = { workflowName: 'executionWorkflow', runId: suspended.runId! };
    const snapshot = await workflows.loadWorkflowSnapshot(where);
    expect(replaceIn(snapshot, EMAIL.to, 'all@example.com')).toBeGreaterThan(0);
    await workflows.persistWorkflowSnapshot({ ...where, snapshot: snapshot! });
    const refused = await other.agent.approveToolCallGenerate({ runId: suspended.runId!, toolCallId: 'call_1' });
    const refusal = new FrameworkApprovalRefusedError('call_1', 'send_email', 'other_arguments');
    expect(refused.text).toContain(refusal.message);
    expect(await f.sent()).toBe(1);
  });
});

/** Replaces every string `from` in the object, in place; how many. */
function replaceIn(value: unknown, from: string, to: string): number {
  if (typeof value !== 'object' || value === null) return 0;
  let replaced = 0;
  for (const [key, inner] of Object.entries(value)) {
    if (inner === from) {
      (value as Record<string, unknown>)[key] = to;
      replaced++;
    } else replaced += replaceIn(inner, from, to);
  }
  return replaced;
}
