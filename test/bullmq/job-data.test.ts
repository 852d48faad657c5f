import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { MalformedNameError, sha256Digest, toolCallArgsHash } from '../../src/core/index.js';
import { BreakerStore } from '../../src/redis/index.js';
import { defineTool, type ToolJobResult } from '../../src/bullmq/index.js';
import { call, jobData, useLanes } from './fixture.js';

const lane = useLanes();
const LONE = '\uD800';

function countingTool() {
  let runs = 0;
  const tool = defineTool({
    name: 'note',
    input: z.object({ text: z.string() }),
    effect: 'opaque',
    destructive: false,
    execute: (a) => `noted ${a.text} #${++runs}`,
  });
  return { tool, runs: () => runs };
}

describe('names that would not read back as themselves', () => {
  it.each([
    ['tenantId', { tenantId: `acme${LONE}` }],
    ['runId', { runId: `run-${LONE}x` }],
    ['sessionId', { sessionId: `s${LONE}` }],
  ])('a %s with a lone surrogate is invalid job data, and nothing is written', async (_field, patch) => {
    const l = await lane();
    const t = countingTool();
    l.worker({ tools: [t.tool] });
    const job = await l.run({ ...jobData([call('note', { text: 'a' })]), ...patch }, { attempts: 3 });
    expect(job.failedReason).toMatch(/^job\.invalid_data: .*lone UTF-16 surrogate/);
    expect(job.attemptsMade).toBe(1);
    expect(t.runs()).toBe(0);
    expect((await l.redis.keys(`${l.prefix}:*`)).filter((k) => !k.startsWith(`${l.prefix}:${l.queueName}:`))).toEqual([]);
  });

  it('the stores refuse them with a typed error before writing', async () => {
    const l = await lane();
    const argsHash = await toolCallArgsHash({}, sha256Digest);
    for (const key of [
      { tenantId: `a${LONE}`, runId: 'r', toolName: 't', argsHash },
      { tenantId: 'a', runId: 'r', toolName: `t${LONE}`, argsHash },
    ]) {
      const error = await l.store.claim(key, { effect: 'opaque' }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(MalformedNameError);
      expect((error as MalformedNameError).code).toBe('identity.malformed_name');
    }
    const breaker = new BreakerStore({ redis: l.redis, prefix: l.prefix });
    await expect(breaker.recordFailure('a', `r${LONE}`, 't')).rejects.toMatchObject({ code: 'identity.malformed_name' });
    // Only BullMQ's own queue keys exist; no receipt, run index or breaker hash.
    expect((await l.redis.keys(`${l.prefix}:*`)).filter((k) => !k.startsWith(`${l.prefix}:${l.queueName}:`))).toEqual([]);
  });
});

describe('call ids and inputs', () => {
  it('two calls with one id in a job are invalid job data; nothing runs', async () => {
    const l = await lane();
    const t = countingTool();
    l.worker({ tools: [t.tool] });
    const job = await l.run(jobData([call('note', { text: 'a' }, 'toolu_same'), call('note', { text: 'b' }, 'toolu_same')]), {
      attempts: 3,
    });
    expect(job.failedReason).toMatch(/^job\.invalid_data: .*duplicate tool call id "toolu_same"/);
    expect(t.runs()).toBe(0);
  });

  it('a call without input is rejected on its own, like a malformed input; the others run', async () => {
    const l = await lane();
    const t = countingTool();
    l.worker({ tools: [t.tool] });
    const data = jobData([{ id: 'toolu_noinput', name: 'note' }, call('note', { text: 'b' }, 'toolu_ok')]);
    const job = await l.run(data);
    const results = (job.returnvalue as ToolJobResult).results;
    expect(results.map((r) => [r.tool_use_id, r.outcome])).toEqual([
      ['toolu_noinput', 'rejected'],
      ['toolu_ok', 'executed'],
    ]);
    expect(results[0]).toMatchObject({ is_error: true });
    expect(results[0]!.content).toMatch(/no input/);
    expect(t.runs()).toBe(1);
  });
});

describe("calls in another API's shape", () => {
  it('fail the job unrecoverably with a hint naming the /client adapter, and nothing runs', async () => {
    const l = await lane();
    const t = countingTool();
    l.worker({ tools: [t.tool] });
    const openAICalls = [{ id: 'call_1', type: 'function', function: { name: 'note', arguments: '{"text":"a"}' } }];
    const job = await l.run({ tenantId: 'acme', runId: 'run-1', calls: openAICalls }, { attempts: 3 });
    expect(job.failedReason).toMatch(/^job\.invalid_data: .*Hint: .*openAIChatToolCalls\(message\) from 'bullmq-tool-receipts\/client'/);
    expect(job.attemptsMade).toBe(1);
    expect(t.runs()).toBe(0);
  });
});
