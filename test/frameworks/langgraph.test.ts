/**
 * `/langgraph` with the real LangGraph.js: a graph of a model node and
 * `ToolNode` with a checkpointer, driven by LangChain's `fakeModel`, runs the
 * tools on `crash-worker` processes (real Redis, real BullMQ), SIGKILLed
 * inside the tool and after an approval; the tool's `interrupt()` is
 * answered by a `Command({ resume })` written as the receipt's fenced
 * decision, and checkpoints are replayed as LangGraph replays them.
 */
import { AIMessage, ToolMessage, type BaseMessage } from '@langchain/core/messages';
import { fakeModel } from '@langchain/core/testing';
import { Command, END, MemorySaver, MessagesAnnotation, START, StateGraph } from '@langchain/langgraph';
import { ToolNode, toolsCondition } from '@langchain/langgraph/prebuilt';
import { describe, expect, it } from 'vitest';
import { ApprovalArgsMismatchError } from '../../src/approvals/index.js';
import type { AnyToolDefinition } from '../../src/bullmq/index.js';
import { ambiguousText } from '../../src/bullmq/outcomes/ambiguity.js';
import {
  FrameworkApprovalRefusedError,
  langGraphDecision,
  langGraphReceiptTools,
  type LangGraphApprovalRequest,
} from '../../src/langgraph/index.js';
import { EMAIL, reached, STEP_TIMEOUT_MS, useFrameworkLanes, type FrameworkLane } from './support.js';

const lane = useFrameworkLanes();

/** Shown no tool answer yet, the model calls send_email (always as call_1); shown the answer, it says what it read. */
function respond(messages: BaseMessage[]): BaseMessage {
  const last = messages.at(-1);
  if (last instanceof ToolMessage) return new AIMessage(`read: ${String(last.content)}`);
  return new AIMessage({ content: '', tool_calls: [{ name: 'send_email', args: { ...EMAIL }, id: 'call_1', type: 'tool_call' }] });
}

/** A model node and a ToolNode (which throws tool errors, so a refusal reaches the caller typed), checkpointed in memory. */
function graphWith(f: FrameworkLane, tool: AnyToolDefinition) {
  const tools = langGraphReceiptTools([tool], f.options);
  const model = fakeModel();
  for (let i = 0; i < 8; i++) model.respond(respond);
  const bound = model.bindTools(tools);
  return new StateGraph(MessagesAnnotation)
    .addNode('agent', async (state) => ({ messages: [await bound.invoke(state.messages)] }))
    .addNode('tools', new ToolNode(tools, { handleToolErrors: false }))
    .addEdge(START, 'agent')
    .addConditionalEdges('agent', toolsCondition, ['tools', END])
    .addEdge('tools', 'agent')
    .compile({ checkpointer: new MemorySaver() });
}

type Graph = ReturnType<typeof graphWith>;
const asks = { messages: [{ role: 'user', content: 'Tell ops the printer is on fire.' }] };
const threadOf = (thread: string) => ({ configurable: { thread_id: thread } });
const lastText = (state: { messages: BaseMessage[] }) => String(state.messages.at(-1)!.content);
/** The requests of the interrupts a run ended on (LangGraph's `__interrupt__`, which the state's type does not list). */
const interruptsOf = (state: object) => ((state as { __interrupt__?: { value: unknown }[] }).__interrupt__ ?? []).map((i) => i.value);

/** The config of the thread's checkpoint just before the tools node ran: replaying from it runs the node again. */
async function beforeTools(graph: Graph, thread: string) {
  for await (const snapshot of graph.getStateHistory(threadOf(thread))) {
    if (snapshot.next.includes('tools') && snapshot.tasks.every((task) => task.interrupts.length === 0)) return snapshot.config;
  }
  throw new Error('no checkpoint before the tools node');
}

const sentResult = JSON.stringify({ sent: true, to: EMAIL.to });

describe('LangGraph: ToolNode with receipt tools', () => {
  it('a worker SIGKILLed inside the tool after its effect: the email went once, the model reads the ambiguous sentence, and a replayed checkpoint runs nothing again', async () => {
    const f = await lane();
    const first = await f.lane.spawn({ CRASH_AT: 'after-effect:send' });
    const graph = graphWith(f, f.sendEmail);
    const running = graph.invoke(asks, threadOf('t-crash'));
    await first.waitFor(reached('after-effect:send'), STEP_TIMEOUT_MS);
    await first.signal('SIGKILL');
    await f.lane.spawn();
    const result = await running;
    expect(lastText(result)).toBe(`read: ${ambiguousText('send_email')}`);
    expect(result.messages.find((m) => m instanceof ToolMessage)).toMatchObject({ status: 'error' });
    expect(await f.sent()).toBe(1);

    const replayed = await graph.invoke(null, await beforeTools(graph, 't-crash'));
    expect(lastText(replayed)).toBe(`read: ${ambiguousText('send_email')}`);
    expect(await f.sent()).toBe(1);
  });

  it('the checkpoint before the tool replayed gets the recorded result; the tool does not run', async () => {
    const f = await lane();
    await f.lane.spawn();
    const graph = graphWith(f, f.sendEmail);
    expect(lastText(await graph.invoke(asks, threadOf('t-replay')))).toBe(`read: ${sentResult}`);
    const replayed = await graph.invoke(null, await beforeTools(graph, 't-replay'));
    expect(lastText(replayed)).toBe(`read: ${sentResult}`);
    expect(await f.sent()).toBe(1);
  });

  it('interrupt() answered by a resume runs the call once though the worker dies after it; the resume replayed neither re-runs nor asks; a decision for another call or other arguments is refused', async () => {
    const f = await lane();
    const first = await f.lane.spawn({ APPROVAL_TOOLS: 'send_email', CRASH_AT: 'after-approval' });
    const graph = graphWith(f, f.sendEmailApproved);

    const asked = await graph.invoke(asks, threadOf('t-approval'));
    const request = interruptsOf(asked)[0] as LangGraphApprovalRequest;
    expect(request).toMatchObject({ kind: 'tool-receipts.approval', toolCallId: 'call_1', toolName: 'send_email' });
    expect((await f.pending()).map((p) => p.receiptKey)).toEqual([request.receiptKey]);
    const atInterrupt = (await graph.getState(threadOf('t-approval'))).config;

    const decision = langGraphDecision(request, { approved: true, actor: 'ana@example.com' });
    const resuming = graph.invoke(new Command({ resume: decision }), threadOf('t-approval'));
    await first.waitFor(reached('after-approval'), STEP_TIMEOUT_MS);
    await first.signal('SIGKILL');
    await f.lane.spawn({ APPROVAL_TOOLS: 'send_email' });
    expect(lastText(await resuming)).toBe(`read: ${sentResult}`);
    expect(await f.sent()).toBe(1);

    // The same resume again from the interrupted checkpoint (the agent crashed before keeping the result): no run, no new interrupt.
    const again = await graph.invoke(new Command({ resume: decision }), atInterrupt);
    expect(interruptsOf(again)).toEqual([]);
    expect(lastText(again)).toBe(`read: ${sentResult}`);
    expect(await f.pending()).toEqual([]);
    expect(await f.sent()).toBe(1);

    // Calls of other threads await approval: a decision for another call, and one for other arguments, are refused typed.
    const otherRequest = async (thread: string) => interruptsOf(await graph.invoke(asks, threadOf(thread)))[0] as LangGraphApprovalRequest;
    const callRequest = await otherRequest('t-other-call');
    const forOtherCall = { ...langGraphDecision(callRequest, { approved: true }), toolCallId: 'call_other' };
    await expect(graph.invoke(new Command({ resume: forOtherCall }), threadOf('t-other-call'))).rejects.toMatchObject({
      constructor: FrameworkApprovalRefusedError,
      refusal: 'other_call',
    });
    const argsRequest = await otherRequest('t-other-args');
    const forOtherArgs = langGraphDecision(
      { ...argsRequest, argsHash: request.argsHash.replace(/^./, (c) => (c === '0' ? '1' : '0')) },
      { approved: true },
    );
    await expect(graph.invoke(new Command({ resume: forOtherArgs }), threadOf('t-other-args'))).rejects.toBeInstanceOf(
      ApprovalArgsMismatchError,
    );
    expect(await f.sent()).toBe(1);
    expect((await f.pending()).map((p) => p.receiptKey).sort()).toEqual([callRequest.receiptKey, argsRequest.receiptKey].sort());
  });
});
