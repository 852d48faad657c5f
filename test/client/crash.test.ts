/**
 * The client with real worker processes SIGKILLed mid-call: an ambiguous call
 * reaches the caller typed, with its receipt key and the completed siblings'
 * results; and an AI SDK `generateText` loop whose tool runs on the workers
 * gets its result with the effect landed once.
 */
import { generateText, stepCountIs } from 'ai';
import { MockLanguageModelV3 } from 'ai/test';
import { describe, expect, it } from 'vitest';
import { AmbiguousTurnError, aiSdkTools, createToolCallClient } from '../../src/client/index.js';
import type { ToolResultBlock } from '../../src/bullmq/index.js';
import { duplicateEffects, outboxTools, providerDeduped, readOutbox } from '../../examples/outbox-tools.js';
import type { WorkerMessage } from '../support/worker-process.js';
import { decisionTrail, expectWaitsThen, RETRYING, useLanes } from '../bullmq/fixture.js';

const STEP_TIMEOUT_MS = 30_000;
const TURN_TIMEOUT_MS = 45_000;
const lane = useLanes();
const reached = (point: string) => (m: WorkerMessage) => m.type === 'reached' && m.point === point;

describe('an ambiguous call reaches the caller typed', () => {
  it('with its receipt key and the results of the calls that completed before it', async () => {
    const l = await lane();
    const first = await l.spawn({ CRASH_AT: 'before-effect', CRASH_TOOL: 'send_email' });
    const client = createToolCallClient({ queue: l.queue, queueEvents: l.events, jobOptions: RETRYING });
    const turn = {
      tenantId: 'acme',
      runId: 'run-amb',
      turnId: 'turn-1',
      calls: [
        { id: 'toolu_ticket', name: 'create_ticket', input: { title: 'Printer on fire' } },
        { id: 'toolu_email', name: 'send_email', input: { to: 'ops@example.com', subject: 'Printer', body: 'On fire.' } },
      ],
      timeoutMs: TURN_TIMEOUT_MS,
    };
    const submitted = client.submit(turn).catch((e: unknown) => e);
    await first.waitFor(reached('before-effect'), STEP_TIMEOUT_MS);
    await first.signal('SIGKILL');
    const takeover = await l.spawn();

    const error = await submitted;
    expect(error).toBeInstanceOf(AmbiguousTurnError);
    const ambiguous = error as AmbiguousTurnError;
    const [emailReceipt] = (await l.store.listAmbiguous()).map((r) => r.redisKey);
    expect(ambiguous).toMatchObject({ code: 'turn.ambiguous', jobId: client.jobIdOf(turn), receiptKeys: [emailReceipt] });
    expect(ambiguous.failedReason).toMatch(/^receipt\.ambiguous: /);
    // The takeover replays the completed ticket and refuses to guess about the email.
    const trail = decisionTrail(takeover);
    expect(trail[0]).toBe('replay');
    expectWaitsThen(trail.slice(1), 'ambiguous');
    expect((await readOutbox(l.redis, l.prefix)).filter((e) => e.tool === 'send_email')).toEqual([]);

    const ticketResult: ToolResultBlock = {
      type: 'tool_result',
      tool_use_id: 'toolu_ticket',
      content: expect.stringContaining('"title":"Printer on fire"') as unknown as string,
      outcome: expect.stringMatching(/^(executed|replayed)$/) as unknown as ToolResultBlock['outcome'],
    };
    // The ticket's result, from the job-log line the processor wrote as the job failed.
    expect(ambiguous.results).toEqual([ticketResult]);
    expect(ambiguous.ambiguousCallId).toBe('toolu_email');

    // Submitting the turn again attaches to the failed job and ends the same way.
    const again = await client.submit(turn).catch((e: unknown) => e);
    expect(again).toBeInstanceOf(AmbiguousTurnError);
    expect(again).toMatchObject({ receiptKeys: [emailReceipt], results: [ticketResult], ambiguousCallId: 'toolu_email' });
    expect((await l.queue.getJobs(['failed', 'completed', 'active', 'waiting', 'delayed'])).length).toBe(1);
  });
});

describe('AI SDK', () => {
  it('a generateText loop runs its tool on a worker, exactly once though the worker is SIGKILLed mid-call', async () => {
    const l = await lane();
    const first = await l.spawn({ CRASH_AT: 'after-effect:create' });
    const client = createToolCallClient({ queue: l.queue, queueEvents: l.events });
    // The tools' definitions only lend their names, descriptions and schemas here: they execute on the workers.
    const { createTicket } = outboxTools(l.redis, l.prefix);
    const tools = aiSdkTools([createTicket], { client, tenantId: 'acme', runId: 'run-ai', timeoutMs: TURN_TIMEOUT_MS });

    const prompts: unknown[] = [];
    const usage = {
      inputTokens: { total: 10, noCache: 10, cacheRead: 0, cacheWrite: 0 },
      outputTokens: { total: 5, text: 5, reasoning: 0 },
    };
    const model = new MockLanguageModelV3({
      doGenerate: async ({ prompt }) => {
        prompts.push(prompt);
        const toolMessage = prompt.find((m) => m.role === 'tool');
        if (!toolMessage) {
          return {
            content: [
              {
                type: 'tool-call',
                toolCallId: 'call_ticket_1',
                toolName: 'create_ticket',
                input: JSON.stringify({ title: 'Printer on fire' }),
              },
            ],
            finishReason: { unified: 'tool-calls', raw: 'tool_use' },
            usage,
            warnings: [],
          };
        }
        const part = toolMessage.content[0] as { output: { type: string; value: unknown } };
        return {
          content: [{ type: 'text', text: `Done: ${String(part.output.value)}` }],
          finishReason: { unified: 'stop', raw: 'end_turn' },
          usage,
          warnings: [],
        };
      },
    });

    const generation = generateText({ model, tools, prompt: 'The printer is on fire; open a ticket.', stopWhen: stepCountIs(4) });
    await first.waitFor(reached('after-effect:create'), STEP_TIMEOUT_MS);
    await first.signal('SIGKILL');
    const takeover = await l.spawn();
    const result = await generation;

    expect(result.steps).toHaveLength(2);
    const [toolResult] = result.steps[0]!.toolResults;
    expect(toolResult).toMatchObject({ toolCallId: 'call_ticket_1', toolName: 'create_ticket' });
    expect(JSON.parse(toolResult!.output as string)).toMatchObject({ title: 'Printer on fire', ticket: expect.stringMatching(/^T-/) });
    expect(result.text).toBe(`Done: ${toolResult!.output as string}`);

    // Attempt 2 on the takeover worker finished the call; every part of the effect landed exactly once.
    expectWaitsThen(decisionTrail(takeover), 'execute@2');
    const outbox = await readOutbox(l.redis, l.prefix);
    expect(duplicateEffects(outbox)).toEqual([]);
    expect(outbox.map((e) => e.part).sort()).toEqual(['create', 'notify', 'reserve']);
    // The recorded step was not run again; the unrecorded one was, and the provider's idempotency key absorbed it.
    expect(await providerDeduped(l.redis, l.prefix)).toEqual({ create: 1 });
    expect(await l.queue.getJobCounts('completed')).toEqual({ completed: 1 });
  });
});
