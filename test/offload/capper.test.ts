import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { capToolResultForLlm, previewWithinCap, toolResultCapper, truncateToolResultText } from '../../src/offload/capper.js';
import { InMemoryToolResultStore } from '../../src/offload/memory-store.js';
import { OFFLOAD_TOOL_NAME, isOffloadPreview } from '../../src/offload/preview.js';
import { buildToolResultRef, toolResultContentSegment } from '../../src/offload/ref.js';
import type { ToolResultStore } from '../../src/offload/types.js';

const call = { toolName: 'Search', toolCallId: 'call_1' };

describe('capToolResultForLlm', () => {
  it('returns a result within the limits unchanged (unwrapped), with the text it measured', async () => {
    const value = { rows: [1, 2, 3] };
    expect(await capToolResultForLlm({ success: true, value }, call)).toEqual({
      kind: 'unchanged',
      value,
      text: '{"rows":[1,2,3]}',
      totalChars: 16,
    });
  });

  it('cuts a result over the cap when no store is configured', async () => {
    const out = await capToolResultForLlm('x'.repeat(500), call, { capChars: 200 });
    expect(out.kind).toBe('truncated');
    expect(out.value).toMatch(/^x+\n\u2026\[\d+ of 500 characters cut; the rest of this result was not kept\]$/);
    expect((out.value as string).length).toBeLessThanOrEqual(200);
  });

  it('offloads over the spill threshold: full text stored with the session owner, preview for the model', async () => {
    const store = new InMemoryToolResultStore();
    const text = 'line\n'.repeat(5_000);
    const out = await capToolResultForLlm(text, call, { spill: { store, sessionId: 'sess', overChars: 1000 } });
    const ref = buildToolResultRef('sess', 'call_1', toolResultContentSegment(text));
    expect(out).toMatchObject({ kind: 'offloaded', ref, totalChars: text.length });
    expect(isOffloadPreview(out.value)).toBe(true);
    expect(store.get(ref)?.content).toBe(text);
    expect(store.ownerOf(ref)).toEqual({ sessionId: 'sess' });
    const again = await capToolResultForLlm(text, call, { spill: { store, sessionId: 'sess', overChars: 1000 } });
    expect(again.value).toBe(out.value);
  });

  it('offloads over the cap even below the spill threshold, with a preview that fits the cap', async () => {
    const store = new InMemoryToolResultStore();
    const text = 'y'.repeat(5_000);
    const out = await capToolResultForLlm(text, call, { capChars: 900, spill: { store, sessionId: 's', overChars: 0 } });
    expect(out.kind).toBe('offloaded');
    expect((out.value as string).length).toBeLessThanOrEqual(900);
  });

  it('keeps a recurring call id from pointing a new result at an old one', async () => {
    const store = new InMemoryToolResultStore();
    const spill = { store, sessionId: 's', overChars: 10 };
    const first = await capToolResultForLlm('first result, long enough', call, { spill });
    const second = await capToolResultForLlm('second result, long enough', call, { spill });
    expect(first.kind === 'offloaded' && second.kind === 'offloaded' && first.ref !== second.ref).toBe(true);
  });

  it('never offloads the page-back tool again; it is only cut', async () => {
    const store = new InMemoryToolResultStore();
    const out = await capToolResultForLlm(
      'z'.repeat(3000),
      { toolName: OFFLOAD_TOOL_NAME, toolCallId: 'c' },
      {
        capChars: 1000,
        spill: { store, sessionId: 's', overChars: 10 },
      },
    );
    expect(out.kind).toBe('truncated');
    expect(store.size).toBe(0);
    const small = await capToolResultForLlm(
      'z'.repeat(500),
      { toolName: OFFLOAD_TOOL_NAME, toolCallId: 'c' },
      {
        spill: { store, sessionId: 's', overChars: 10 },
      },
    );
    expect(small.kind).toBe('unchanged');
  });

  it('falls back to cutting when the store fails, and reports the failure', async () => {
    const failing: ToolResultStore = {
      put: () => Promise.reject(new Error('redis down')),
      get: () => undefined,
      ownerOf: () => undefined,
    };
    const over = await capToolResultForLlm('q'.repeat(3000), call, { capChars: 1000, spill: { store: failing, sessionId: 's' } });
    expect(over).toMatchObject({ kind: 'truncated', storeError: expect.objectContaining({ message: 'redis down' }) });
    const under = await capToolResultForLlm('q'.repeat(30_000), call, { spill: { store: failing, sessionId: 's' } });
    expect(under).toMatchObject({ kind: 'unchanged', totalChars: 30_000 });
    expect(under.kind === 'unchanged' && under.storeError).toBeTruthy();
  });

  it('cuts rather than hand out a ref owned by someone else', async () => {
    const store = new InMemoryToolResultStore();
    const text = 'w'.repeat(30_000);
    await capToolResultForLlm(text, call, { spill: { store, sessionId: 's', provenance: { sessionId: 's', taskId: 'a' } } });
    const out = await capToolResultForLlm(text, call, {
      capChars: 25_000,
      spill: { store, sessionId: 's', provenance: { sessionId: 's', taskId: 'b' } },
    });
    expect(out).toMatchObject({ kind: 'truncated', storeError: expect.objectContaining({ code: 'tool_result.ref_conflict' }) });
  });

  it('treats a cap of 0 or less as no cap', async () => {
    const out = await capToolResultForLlm('v'.repeat(200_000), call, { capChars: 0 });
    expect(out.kind).toBe('unchanged');
  });

  it('toolResultCapper fixes the options', async () => {
    const cap = toolResultCapper({ capChars: 10 });
    expect((await cap('0123456789abc', call)).kind).toBe('truncated');
  });
});

describe('truncateToolResultText and previewWithinCap', () => {
  it('property: a cut text never exceeds the cap and starts with the text', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 400 }), fc.integer({ min: 1, max: 300 }), (text, cap) => {
        const out = truncateToolResultText(text, cap);
        expect(out.length).toBeLessThanOrEqual(Math.max(cap, 0));
        if (text.length <= cap) expect(out).toBe(text);
      }),
      { numRuns: 1000 },
    );
  });

  it('property: a preview fits any cap that can hold the bare marker', () => {
    const text = 'p'.repeat(50_000);
    const bare = previewWithinCap(text, 'tr_s~c', 1);
    fc.assert(
      fc.property(fc.integer({ min: bare.length, max: 10_000 }), (cap) => {
        expect(previewWithinCap(text, 'tr_s~c', cap).length).toBeLessThanOrEqual(cap);
      }),
      { numRuns: 1000 },
    );
  });
});
