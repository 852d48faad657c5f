/**
 * The options an outside review found accepted although they cannot work,
 * each refused now when the processor is made, against a real Redis:
 *
 * - `maxWaitMs: NaN` (what `Number(process.env.X)` gives when X is unset)
 *   made a job waiting on a live attempt claim its receipt over a thousand
 *   times in under two seconds;
 * - `maxWaitMs: -1000` and `waitJitterMs: -5` were taken as they were;
 * - `destructiveTools: 'Bash'` (a string, not an array) was read by
 *   character, so `Bash` was not destructive: its invalid input went to the
 *   reshaper and the command ran.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ToolReceiptsError } from '../../src/core/errors.js';
import { defineTool, withToolReceipts, type ToolJobResult, type ToolReceiptsOptions } from '../../src/bullmq/index.js';
import type { Reshaper } from '../../src/repair/index.js';
import { call, jobData, silent, useLanes } from './fixture.js';

const lane = useLanes();

function bashTool() {
  const ran: unknown[] = [];
  const tool = defineTool({
    name: 'Bash',
    input: z.object({ command: z.string() }),
    effect: 'opaque',
    // The tool says it is harmless: only the deployment's destructiveTools can say otherwise.
    destructive: false,
    execute(args) {
      ran.push(args);
      return 'ran';
    },
  });
  return { tool, ran };
}

/** A reshaper that "corrects" any call into a command, as a model asked to fix it might. */
function countingReshaper() {
  const asked = { count: 0 };
  const reshaper: Reshaper = {
    async reshape(request) {
      asked.count += 1;
      return {
        ...request.message,
        content: request.message.content.map((block) =>
          block.type === 'tool_use' ? { ...block, input: { command: 'rm -rf ./build' } } : block,
        ),
      };
    },
  };
  return { reshaper, asked };
}

/** The typed refusal `make` throws (asserted by code, so this file also runs against a build without the class). */
function refusal(make: () => unknown): ToolReceiptsError & { option?: string } {
  try {
    make();
  } catch (error) {
    expect(error).toBeInstanceOf(ToolReceiptsError);
    expect((error as ToolReceiptsError).code).toBe('options.invalid');
    return error as ToolReceiptsError & { option?: string };
  }
  throw new Error('the options were accepted');
}

describe('options the review found accepted', () => {
  it.each([
    ['maxWaitMs', Number(process.env['TOOL_RECEIPTS_UNSET_VARIABLE']), 'got NaN'],
    ['maxWaitMs', -1000, 'got -1000'],
    ['maxWaitMs', 0, 'got 0'],
    ['maxWaitMs', Number.POSITIVE_INFINITY, 'got Infinity'],
    ['waitJitterMs', -5, 'got -5'],
    ['waitJitterMs', Number.NaN, 'got NaN'],
    ['leaseMs', Number.NaN, 'got NaN'],
    ['destructiveTools', 'Bash', 'must be an array of non-empty strings; got "Bash"'],
  ])('%s: %s is refused when the processor is made, naming the option and the value', async (option, value, said) => {
    const l = await lane();
    const { tool } = bashTool();
    const error = refusal(() =>
      withToolReceipts({ redis: l.redis, prefix: l.prefix, tools: [tool], logger: silent, [option]: value } as ToolReceiptsOptions),
    );
    expect(error.code).toBe('options.invalid');
    expect(error.option).toBe(option);
    expect(error.message).toContain(`\`${option}\``);
    expect(error.message).toContain(said);
  });

  it('a misspelt option is refused with the one meant', async () => {
    const l = await lane();
    const { tool } = bashTool();
    const error = refusal(() =>
      withToolReceipts({ redis: l.redis, prefix: l.prefix, tools: [tool], maxWait: 500 } as unknown as ToolReceiptsOptions),
    );
    expect(error.option).toBe('maxWait');
    expect(error.message).toContain('did you mean `maxWaitMs`?');
  });

  it('destructiveTools given as the array it must be makes Bash destructive: its invalid input reaches neither the reshaper nor the tool', async () => {
    const l = await lane();
    const bash = bashTool();
    const { reshaper, asked } = countingReshaper();
    l.worker({ tools: [bash.tool], reshaper, destructiveTools: ['Bash'], logger: silent });
    const job = await l.run(jobData([call('Bash', { cmd: 'rm -rf ./build' })]));
    const [result] = (job.returnvalue as ToolJobResult).results;
    expect(result).toMatchObject({ outcome: 'rejected', is_error: true });
    expect(asked.count).toBe(0);
    expect(bash.ran).toEqual([]);
  });
});
