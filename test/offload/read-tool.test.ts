import { describe, expect, it } from 'vitest';
import { createReadToolResultTool, READ_TOOL_RESULT_DEFAULT_LIMIT } from '../../src/offload/read-tool.js';
import { InMemoryToolResultStore } from '../../src/offload/memory-store.js';
import { OFFLOAD_TOOL_NAME } from '../../src/offload/preview.js';

describe('createReadToolResultTool', () => {
  const store = new InMemoryToolResultStore();
  const text = 'abcdefghij'.repeat(3_000);
  store.put('tr_s~c', text, { sessionId: 's' });
  store.put('odd"ref', 'quoted');
  const tool = createReadToolResultTool(store);

  it('is a read-only, resumable tool named ReadToolResult with a zod input schema', () => {
    expect(tool.name).toBe(OFFLOAD_TOOL_NAME);
    expect(tool.readOnly).toBe(true);
    expect(tool.effect).toBe('resumable');
    expect(tool.input.safeParse({ ref: 'x', offset: 1, limit: 2 }).success).toBe(true);
    expect(tool.input.safeParse({ ref: '' }).success).toBe(false);
  });

  it('pages through a stored result and says where the next page starts', async () => {
    const first = await tool.execute({ ref: 'tr_s~c' });
    const lines = first.split('\n');
    expect(lines[0]).toBe(`[ref "tr_s~c": characters 0 to ${READ_TOOL_RESULT_DEFAULT_LIMIT} of 30000]`);
    expect(lines[1]).toBe(text.slice(0, READ_TOOL_RESULT_DEFAULT_LIMIT));
    expect(lines[2]).toContain(`offset ${READ_TOOL_RESULT_DEFAULT_LIMIT}`);
    const last = await tool.execute({ ref: 'tr_s~c', offset: 29_990, limit: 100 });
    expect(last).toBe('[ref "tr_s~c": characters 29990 to 30000 of 30000]\nabcdefghij\n[end of the stored result]');
    expect(await tool.execute({ ref: 'tr_s~c', offset: 40_000 })).toContain('nothing at offset 30000');
  });

  it('makes a page small enough that the whole answer fits maxAnswerChars, footer and all; paging back gives the exact text', async () => {
    const capped = createReadToolResultTool(store, { maxAnswerChars: 10_000 });
    let offset = 0;
    let read = '';
    for (let page = 0; page < 10 && offset < text.length; page++) {
      const answer = await capped.execute({ ref: 'tr_s~c', offset });
      expect(answer.length).toBeLessThanOrEqual(10_000);
      const lines = answer.split('\n');
      read += lines[1];
      const next = /with offset (\d+) for the next page/.exec(lines[2]!);
      if (next === null) {
        expect(lines[2]).toBe('[end of the stored result]');
        break;
      }
      offset = Number(next[1]);
      expect(offset).toBe(read.length);
    }
    expect(read).toBe(text);
  });

  it('caps a page at maxLimit', async () => {
    const small = createReadToolResultTool(store, { maxLimit: 5 });
    expect(await small.execute({ ref: 'tr_s~c', limit: 1000 })).toContain('characters 0 to 5 of 30000');
  });

  it('answers plainly for unknown, expired or unsafe refs', async () => {
    for (const ref of ['tr_gone~x', '../etc']) {
      const answer = await tool.execute({ ref });
      expect(answer).toContain('Nothing is stored under ref');
      expect(answer).toContain('expired');
    }
  });

  it('accepts a ref copied with the marker escaping left in', async () => {
    expect(await tool.execute({ ref: 'odd&quot;ref' })).toContain('quoted');
  });

  it('with a reader, answers only for refs that reader owns, and the same for every other ref', async () => {
    const own = await tool.read({ ref: 'tr_s~c', limit: 5 }, { sessionId: 's' });
    expect(own).toEqual({ found: true, text: expect.stringContaining('abcde') });
    const unknown = await tool.read({ ref: 'tr_s~zz' }, { sessionId: 's' });
    expect(unknown.found).toBe(false);
    for (const reader of [{ sessionId: 'other' }, { sessionId: 's', taskId: 'narrower' }]) {
      const refused = await tool.read({ ref: 'tr_s~c' }, reader);
      expect(refused.found).toBe(false);
      expect(refused.text).toBe(unknown.text.replace('tr_s~zz', 'tr_s~c'));
    }
    // An entry stored without an owner is nobody's.
    expect((await tool.read({ ref: 'odd"ref' }, { sessionId: 's' })).found).toBe(false);
  });

  it('answers invalid arguments instead of throwing', async () => {
    expect(await tool.execute({ ref: 'tr_s~c', offset: -1 } as never)).toContain('was not run');
  });
});
