/**
 * ToolErrorResult: a tool that ran and whose provider answered with a
 * failure returns an error result for the model that is recorded as a
 * completed call (replayed, never run again), offloaded when large. And a
 * tool's own inputJsonSchema is what the model is shown.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { RedisToolResultStore } from '../../src/offload/index.js';
import { defineTool, toolListForModel, ToolErrorResult, type ToolJobResult } from '../../src/bullmq/index.js';
import { call, jobData, RETRYING, useLanes } from './fixture.js';

const lane = useLanes();

describe('ToolErrorResult', () => {
  it('reaches the model with is_error, completes the receipt, and is replayed without running again', async () => {
    const l = await lane();
    let runs = 0;
    const charge = defineTool({
      name: 'charge',
      input: z.object({ cents: z.number() }),
      effect: 'opaque',
      destructive: false,
      execute: () => {
        runs++;
        return new ToolErrorResult({ declined: 'insufficient funds' });
      },
    });
    l.worker({ tools: [charge] });
    const data = jobData([call('charge', { cents: 5 }, 'toolu_c')]);
    const job = await l.run(data, RETRYING);
    expect(await job.getState()).toBe('completed');
    expect((job.returnvalue as ToolJobResult).results).toEqual([
      { type: 'tool_result', tool_use_id: 'toolu_c', content: '{"declined":"insufficient funds"}', is_error: true, outcome: 'executed' },
    ]);
    expect(await l.receipt(data.tenantId, data.runId)).toMatchObject({ status: 'completed', attempts: 1 });
    const again = await l.run(jobData(data.calls, data));
    expect((again.returnvalue as ToolJobResult).results[0]).toMatchObject({
      outcome: 'replayed',
      is_error: true,
      content: '{"declined":"insufficient funds"}',
    });
    expect(runs).toBe(1);
  });

  it('a large error result is offloaded like any large result', async () => {
    const l = await lane();
    const dump = defineTool({
      name: 'dump',
      input: z.object({}),
      effect: 'opaque',
      destructive: false,
      execute: () => new ToolErrorResult('x'.repeat(50_000)),
    });
    l.worker({ tools: [dump], resultStore: new RedisToolResultStore({ redis: l.redis, prefix: l.prefix }) });
    const job = await l.run(jobData([call('dump', {})]));
    const [block] = (job.returnvalue as ToolJobResult).results;
    expect(block).toMatchObject({ is_error: true, outcome: 'executed' });
    expect(block!.content.length).toBeLessThan(10_000);
    expect(block!.content).toMatch(/read_tool_result|ref/i);
  });
});

describe('inputJsonSchema', () => {
  it('is shown to the model as given, a copy; the zod schema still validates', () => {
    const shown = { type: 'object', properties: { q: { type: 'string', description: 'from the server' } }, required: ['q'] };
    const search = defineTool({
      name: 'search',
      input: z.object({ q: z.string() }),
      inputJsonSchema: shown,
      effect: 'opaque',
      readOnly: true,
      execute: () => 'ok',
    });
    const [listed] = toolListForModel([search]);
    expect(listed!.input_schema).toEqual(shown);
    expect(listed!.input_schema).not.toBe(shown);
  });
});
