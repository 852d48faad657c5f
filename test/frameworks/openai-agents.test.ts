/**
 * `/openai-agents` with the real OpenAI Agents SDK: its runner's own loop,
 * driven by the SDK's `ScriptedModel`, runs the tools on `crash-worker`
 * processes (real Redis, real BullMQ), SIGKILLed inside the tool and after
 * an approval; `needsApproval` interruptions approved on a saved `RunState`
 * become the receipt's fenced decision.
 */
import { Agent, run, RunState, setTracingDisabled, ToolCallError, type AgentInputItem } from '@openai/agents';
import { assistantMessage, functionCall, modelResponder, ScriptedModel, type RecordedModelCall } from '@openai/agents/testing';
import { describe, expect, it } from 'vitest';
import { denyCall, readApproval } from '../../src/approvals/index.js';
import type { AnyToolDefinition } from '../../src/bullmq/index.js';
import { ambiguousText } from '../../src/bullmq/outcomes/ambiguity.js';
import { FrameworkApprovalRefusedError, openAIAgentsReceiptTools } from '../../src/openai-agents/index.js';
import { EMAIL, eventually, reached, STEP_TIMEOUT_MS, useFrameworkLanes, type FrameworkLane } from './support.js';

setTracingDisabled(true);
const lane = useFrameworkLanes();

/** Asked with no tool output yet, the model calls send_email (always as call_1); shown the output, it says what it read. */
function respond(call: RecordedModelCall) {
  const items = typeof call.request.input === 'string' ? [] : (call.request.input as AgentInputItem[]);
  const result = items.find((item) => item.type === 'function_call_result') as { output: string | { text?: string } } | undefined;
  if (result === undefined) return [functionCall('send_email', { ...EMAIL }, { callId: 'call_1' })];
  return [assistantMessage(`read: ${typeof result.output === 'string' ? result.output : result.output.text}`)];
}

/** An agent with the receipt tools and a fresh scripted model (a few turns of it). */
function agentWith(f: FrameworkLane, tool: AnyToolDefinition, runId: string) {
  const model = new ScriptedModel([modelResponder(respond), modelResponder(respond), modelResponder(respond)]);
  return new Agent({ name: 'ops', instructions: 'Help ops.', model, tools: openAIAgentsReceiptTools([tool], { ...f.options, runId }) });
}

const sentResult = JSON.stringify({ sent: true, to: EMAIL.to });

describe('OpenAI Agents: run() with receipt tools', () => {
  it('a worker SIGKILLed inside the tool after its effect: the email went once, the model reads the ambiguous sentence as the tool output, and a retried run runs nothing again', async () => {
    const f = await lane();
    const first = await f.lane.spawn({ CRASH_AT: 'after-effect:send' });
    const running = run(agentWith(f, f.sendEmail, 'conv-crash'), 'Tell ops the printer is on fire.');
    await first.waitFor(reached('after-effect:send'), STEP_TIMEOUT_MS);
    await first.signal('SIGKILL');
    await f.lane.spawn();
    const result = await running;
    expect(result.finalOutput).toBe(`read: ${ambiguousText('send_email')}`);
    expect(await f.sent()).toBe(1);

    const retried = await run(agentWith(f, f.sendEmail, 'conv-crash'), 'Tell ops the printer is on fire.');
    expect(retried.finalOutput).toBe(`read: ${ambiguousText('send_email')}`);
    expect(await f.sent()).toBe(1);
  });

  it('the same turn run again gets the recorded result; the tool does not run', async () => {
    const f = await lane();
    await f.lane.spawn();
    const first = await run(agentWith(f, f.sendEmail, 'conv-replay'), 'Tell ops the printer is on fire.');
    expect(first.finalOutput).toBe(`read: ${sentResult}`);
    const replayed = await run(agentWith(f, f.sendEmail, 'conv-replay'), 'Tell ops the printer is on fire.');
    expect(replayed.finalOutput).toBe(`read: ${sentResult}`);
    expect(await f.sent()).toBe(1);
  });

  it('an approval on the saved RunState runs the call once though the worker dies after it; resuming that state again neither re-runs nor asks; an edited or foreign call is refused', async () => {
    const f = await lane();
    const first = await f.lane.spawn({ APPROVAL_TOOLS: 'send_email', CRASH_AT: 'after-approval' });
    const agent = agentWith(f, f.sendEmailApproved, 'conv-approval');

    const asked = await run(agent, 'Tell ops the printer is on fire.');
    expect(asked.interruptions.map((i) => i.rawItem)).toMatchObject([{ type: 'function_call', name: 'send_email', callId: 'call_1' }]);
    expect((await f.pending()).map((p) => p.toolName)).toEqual(['send_email']);
    const state = await RunState.fromString(agent, asked.state.toString());
    state.approve(state.getInterruptions()[0]!);
    const approved = state.toString();

    const resuming = run(agent, state);
    await first.waitFor(reached('after-approval'), STEP_TIMEOUT_MS);
    await first.signal('SIGKILL');
    await f.lane.spawn({ APPROVAL_TOOLS: 'send_email' });
    expect((await resuming).finalOutput).toBe(`read: ${sentResult}`);
    expect(await f.sent()).toBe(1);

    // The agent's process crashed after the approval: the saved approved state is resumed again.
    const again = await run(agentWith(f, f.sendEmailApproved, 'conv-approval'), await RunState.fromString(agent, approved));
    expect(again.finalOutput).toBe(`read: ${sentResult}`);
    expect(again.interruptions).toEqual([]);
    expect(await f.pending()).toEqual([]);
    expect(await f.sent()).toBe(1);

    // The approved state with the call's arguments edited, or moved to a call no approval was asked for: refused, typed.
    const edited = approved.replaceAll(EMAIL.to, 'all@example.com');
    const forged = approved.replaceAll('call_1', 'call_forged');
    for (const [saved, refusal] of [
      [edited, 'other_arguments'],
      [forged, 'not_requested'],
    ] as const) {
      const resumed = await run(agent, await RunState.fromString(agent, saved)).catch((error: unknown) => error);
      expect(refusalIn(resumed)).toMatchObject({ code: 'framework.approval_refused', refusal });
    }
    expect(await f.sent()).toBe(1);
  });

  it('a rejection on the saved RunState never reaches the tool: nothing runs, and the receipt waits for its own decision', async () => {
    const f = await lane();
    await f.lane.spawn({ APPROVAL_TOOLS: 'send_email' });
    const agent = agentWith(f, f.sendEmailApproved, 'conv-reject');
    const asked = await run(agent, 'Tell ops the printer is on fire.');
    const [pending] = await f.pending();
    asked.state.reject(asked.interruptions[0]!);
    const rejected = await run(agent, asked.state);
    expect(rejected.interruptions).toEqual([]);
    expect(await f.pending()).toEqual([pending]);
    // As docs/frameworks.md says: the app writes the rejection with denyCall.
    await denyCall({ redis: f.lane.redis, prefix: f.lane.prefix, ...pending!, actor: 'ana@example.com', queue: f.lane.queue });
    const decided = () => readApproval({ redis: f.lane.redis, prefix: f.lane.prefix, receiptKey: pending!.receiptKey });
    await eventually(async () => ((await decided()) as { status?: string } | undefined)?.status === 'denied');
    expect(await f.sent()).toBe(0);
  });
});

/** The refusal the run threw: the SDK's ToolCallError around the one the tool threw. */
function refusalIn(error: unknown): FrameworkApprovalRefusedError {
  expect(error).toBeInstanceOf(ToolCallError);
  const thrown = (error as ToolCallError).error;
  expect(thrown).toBeInstanceOf(FrameworkApprovalRefusedError);
  return thrown as FrameworkApprovalRefusedError;
}
