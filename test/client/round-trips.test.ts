/**
 * One recorded assistant turn per model API: its calls are read, submitted
 * through the client, run on a real BullMQ worker, and the results are
 * written as that API's next message, compared byte for byte with the
 * fixture written from the API's documentation.
 */
import { describe, expect, it } from 'vitest';
import {
  aiSdkToolCalls,
  aiSdkToolMessage,
  anthropicToolCalls,
  anthropicToolResultMessage,
  openAIChatToolCalls,
  openAIChatToolMessages,
  openAIResponsesToolCalls,
  openAIResponsesToolOutputs,
  submitTurnCalls,
  type TurnCalls,
} from '../../src/client/index.js';
import type { ToolResultBlock } from '../../src/bullmq/index.js';
import { useLanes } from '../bullmq/fixture.js';
import { clientOn, fixtureTools, formatFixture } from './support.js';

const lane = useLanes();

interface FormatCase {
  readonly name: string;
  readonly read: (fixture: never) => TurnCalls;
  readonly write: (turn: TurnCalls, results: ToolResultBlock[]) => unknown;
  readonly pick?: (fixture: never) => unknown;
}

const cases: FormatCase[] = [
  { name: 'anthropic', read: anthropicToolCalls, write: anthropicToolResultMessage },
  {
    name: 'openai-chat',
    read: openAIChatToolCalls,
    write: openAIChatToolMessages,
    pick: (completion: { choices: Array<{ message: unknown }> }) => completion.choices[0]!.message,
  },
  { name: 'openai-responses', read: openAIResponsesToolCalls, write: openAIResponsesToolOutputs },
  { name: 'ai-sdk', read: aiSdkToolCalls, write: aiSdkToolMessage },
];

describe('round trips: recorded assistant turn → calls → worker → next message', () => {
  it.each(cases)('$name', async ({ name, read, write, pick }) => {
    const l = await lane();
    const { runs, tools } = fixtureTools();
    l.worker({ tools });
    const client = clientOn(l);
    const recorded = formatFixture(`${name}.assistant.json`) as never;
    const turn = read((pick ? pick(recorded) : recorded) as never);

    const results = await submitTurnCalls(client, turn, { tenantId: 'acme', runId: `run-${name}`, turnId: 'turn-1' });
    const next = write(turn, results);

    expect(JSON.stringify(next)).toBe(JSON.stringify(formatFixture(`${name}.next.json`)));
    // Each submitted call ran once on the worker (a call refused for its arguments never reached it).
    expect(runs).toEqual({ get_weather: 2, lookup_order: 1 });
    expect(await l.queue.getJobCounts('completed')).toEqual({ completed: 1 });
  });
});
