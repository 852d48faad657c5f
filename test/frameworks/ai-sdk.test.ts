/**
 * `/ai-sdk` with the real AI SDK: `generateText`'s own loop, driven by the
 * SDK's `MockLanguageModelV3` (see support.ts), runs the tools on `crash-worker` processes
 * (real Redis, real BullMQ), SIGKILLed inside the tool and after an approval;
 * the SDK's approval parts become the receipt's fenced decision.
 */
import { generateText, stepCountIs, type ModelMessage, type ToolSet } from 'ai';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineTool, DestructiveRanError } from '../../src/index.js';
import { aiSdkReceiptTools, FrameworkApprovalRefusedError } from '../../src/ai-sdk/index.js';
import { ambiguousText } from '../../src/bullmq/outcomes/ambiguity.js';
import { MockLanguageModelV3 } from 'ai/test';
import { EMAIL, reached, scriptedAiSdkModel, STEP_TIMEOUT_MS, usage, useFrameworkLanes } from './support.js';

const lane = useFrameworkLanes();

const userAsks: ModelMessage[] = [{ role: 'user', content: 'Tell ops the printer is on fire.' }];

describe('AI SDK: generateText with receipt tools', () => {
  it('a worker SIGKILLed inside the tool after its effect: the email went once, the model reads the ambiguous sentence, and a retried generateText runs nothing again', async () => {
    const f = await lane();
    const first = await f.lane.spawn({ CRASH_AT: 'after-effect:send' });
    const tools = aiSdkReceiptTools([f.sendEmail], { ...f.options, runId: 'conv-crash' });
    const model = scriptedAiSdkModel();

    const generation = generateText({ model, tools, messages: userAsks, stopWhen: stepCountIs(3) });
    await first.waitFor(reached('after-effect:send'), STEP_TIMEOUT_MS);
    await first.signal('SIGKILL');
    await f.lane.spawn();
    const result = await generation;

    expect(result.steps).toHaveLength(2);
    expect(result.text).toBe(`read: ${ambiguousText('send_email')}`);
    expect(await f.sent()).toBe(1);

    // The SDK's own retry of the turn: the same messages again attach to the failed call's job.
    const again = scriptedAiSdkModel();
    const retried = await generateText({ model: again, tools, messages: userAsks, stopWhen: stepCountIs(3) });
    expect(retried.text).toBe(`read: ${ambiguousText('send_email')}`);
    expect(await f.sent()).toBe(1);
  });

  it('the same turn replayed by generateText on the same messages gets the recorded result; the tool does not run', async () => {
    const f = await lane();
    await f.lane.spawn();
    const tools = aiSdkReceiptTools([f.sendEmail], { ...f.options, runId: 'conv-replay' });
    const first = await generateText({ model: scriptedAiSdkModel(), tools, messages: userAsks, stopWhen: stepCountIs(3) });
    expect(first.text).toBe(`read: ${JSON.stringify({ sent: true, to: EMAIL.to })}`);
    expect(await f.sent()).toBe(1);

    const replayed = await generateText({ model: scriptedAiSdkModel(), tools, messages: userAsks, stopWhen: stepCountIs(3) });
    expect(replayed.text).toBe(first.text);
    expect(await f.sent()).toBe(1);
  });

  it('a provider that reuses a tool-call id in a later step names another call: it runs, with its own turn', async () => {
    const f = await lane();
    await f.lane.spawn();
    const tools = aiSdkReceiptTools([f.sendEmail], { ...f.options, runId: 'conv-reused-id' });
    // Step 1 and step 2 both call send_email as call_1, the second time with another subject; step 3 answers.
    const model = new MockLanguageModelV3({
      doGenerate: async ({ prompt }) => {
        const answers = prompt.flatMap((m) => (m.role === 'tool' ? m.content : [])).filter((p) => p.type === 'tool-result');
        if (answers.length < 2) {
          const input = { ...EMAIL, subject: answers.length === 0 ? 'Printer' : 'Printer, again' };
          const call = { type: 'tool-call' as const, toolCallId: 'call_1', toolName: 'send_email', input: JSON.stringify(input) };
          return { content: [call], finishReason: { unified: 'tool-calls', raw: undefined }, usage, warnings: [] };
        }
        return { content: [{ type: 'text', text: 'done' }], finishReason: { unified: 'stop', raw: undefined }, usage, warnings: [] };
      },
    });
    const result = await generateText({ model, tools, messages: userAsks, stopWhen: stepCountIs(4) });
    const outputs = result.steps.flatMap((step) => step.toolResults.map((r) => r.output));
    const sent = JSON.stringify({ sent: true, to: EMAIL.to });
    expect(outputs).toEqual([sent, sent]);
    expect(await f.sent()).toBe(2);
  });

  it('a call whose job fails for good (a destructive failure) is a tool error the model reads, not a thrown run', async () => {
    const f = await lane();
    const drop = defineTool({
      name: 'send_email',
      input: z.object({ to: z.string(), subject: z.string(), body: z.string() }),
      effect: 'opaque',
      execute: () => {
        throw new DestructiveRanError('the mail server took half the message');
      },
    });
    f.lane.worker({ tools: [drop] });
    const tools = aiSdkReceiptTools([drop], { ...f.options, runId: 'conv-destructive' });
    const result = await generateText({ model: scriptedAiSdkModel(), tools, messages: userAsks, stopWhen: stepCountIs(3) });
    const errors = result.steps.flatMap((step) => step.content.filter((part) => part.type === 'tool-error'));
    expect(errors).toHaveLength(1);
    expect(errors[0]!.error).toMatchObject({ code: 'tool.error_result' });
    expect(String((errors[0]!.error as Error).message)).toContain('Tool send_email failed: the mail server took half the message');
  });

  it('an approval in the SDK shape runs the call once though the worker dies after it; a resume neither re-runs nor asks again; a response for another call or edited arguments is refused', async () => {
    const f = await lane();
    const first = await f.lane.spawn({ APPROVAL_TOOLS: 'send_email', CRASH_AT: 'after-approval' });
    const tools = aiSdkReceiptTools([f.sendEmailApproved], { ...f.options, runId: 'conv-approval' });

    const asked = await generateText({ model: scriptedAiSdkModel(), tools, messages: userAsks, stopWhen: stepCountIs(3) });
    const request = asked.content.find((p) => p.type === 'tool-approval-request');
    expect(request).toMatchObject({ toolCall: { toolCallId: 'call_1', toolName: 'send_email', input: EMAIL } });
    // The request is kept on the server: the call waits on its receipt.
    expect((await f.pending()).map((p) => p.toolName)).toEqual(['send_email']);
    expect(await f.sent()).toBe(0);

    const history: ModelMessage[] = [
      ...userAsks,
      ...asked.response.messages,
      { role: 'tool', content: [{ type: 'tool-approval-response', approvalId: request!.approvalId, approved: true }] },
    ];
    const resumed = generateText({ model: scriptedAiSdkModel(), tools, messages: history, stopWhen: stepCountIs(3) });
    await first.waitFor(reached('after-approval'), STEP_TIMEOUT_MS);
    await first.signal('SIGKILL');
    await f.lane.spawn({ APPROVAL_TOOLS: 'send_email' });
    const done = await resumed;
    expect(done.text).toBe(`read: ${JSON.stringify({ sent: true, to: EMAIL.to })}`);
    expect(await f.sent()).toBe(1);

    // The agent process crashed and resumes from the same history: the result comes back, nobody is asked, nothing runs.
    const again = await generateText({ model: scriptedAiSdkModel(), tools, messages: history, stopWhen: stepCountIs(3) });
    expect(again.text).toBe(done.text);
    expect(again.content.some((p) => p.type === 'tool-approval-request')).toBe(false);
    expect(await f.pending()).toEqual([]);
    expect(await f.sent()).toBe(1);

    // The same approval response, with the call's arguments edited in the history: refused, typed, and the model reads why.
    const edited = history.map((message) =>
      message.role !== 'assistant' || typeof message.content === 'string'
        ? message
        : {
            ...message,
            content: message.content.map((p) => (p.type === 'tool-call' ? { ...p, input: { ...EMAIL, to: 'all@example.com' } } : p)),
          },
    ) as ModelMessage[];
    expect(await refusalOf(tools, edited)).toMatchObject({ code: 'framework.approval_refused', refusal: 'other_arguments' });

    // A response for a call whose id no approval was asked for: refused, typed.
    const forged = JSON.parse(JSON.stringify(history).replaceAll('"call_1"', '"call_forged"')) as ModelMessage[];
    expect(await refusalOf(tools, forged)).toMatchObject({ code: 'framework.approval_refused', refusal: 'not_requested' });
    expect(await f.sent()).toBe(1);
  });

  it("an approval decided with the workers' durability fails, typed, when no replica acknowledges the decision", async () => {
    const f = await lane();
    await f.lane.spawn({ APPROVAL_TOOLS: 'send_email' });
    // This lane's Redis has no replica: a decision that must reach one is never acknowledged.
    const approvals = { ...f.options.approvals!, durability: { replicas: 1, timeoutMs: 200 } };
    const tools = aiSdkReceiptTools([f.sendEmailApproved], { ...f.options, approvals, runId: 'conv-durable' });
    const asked = await generateText({ model: scriptedAiSdkModel(), tools, messages: userAsks, stopWhen: stepCountIs(3) });
    const request = asked.content.find((p) => p.type === 'tool-approval-request');
    expect(request).toBeDefined();
    const history: ModelMessage[] = [
      ...userAsks,
      ...asked.response.messages,
      { role: 'tool', content: [{ type: 'tool-approval-response', approvalId: request!.approvalId, approved: true }] },
    ];
    const thrown: unknown[] = [];
    await generateText({
      model: scriptedAiSdkModel(),
      tools,
      messages: history,
      stopWhen: stepCountIs(1),
      experimental_onToolCallFinish: (event) => void (event.success ? undefined : thrown.push(event.error)),
    });
    expect(thrown).toMatchObject([{ code: 'durability.not_acknowledged' }]);
  });
});

/** What the tool threw when generateText resumed from `messages`, checked to be what the model then read. */
async function refusalOf(tools: ToolSet, messages: ModelMessage[]): Promise<FrameworkApprovalRefusedError> {
  const thrown: unknown[] = [];
  const result = await generateText({
    model: scriptedAiSdkModel(),
    tools,
    messages,
    stopWhen: stepCountIs(1),
    experimental_onToolCallFinish: (event) => void (event.success ? undefined : thrown.push(event.error)),
  });
  expect(thrown).toHaveLength(1);
  const [error] = thrown;
  expect(error).toBeInstanceOf(FrameworkApprovalRefusedError);
  expect(result.text).toBe(`read: ${(error as Error).message}`);
  return error as FrameworkApprovalRefusedError;
}
