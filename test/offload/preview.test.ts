import { describe, expect, it } from 'vitest';
import {
  buildPreview,
  escapeRefAttribute,
  isOffloadedDetailReplacement,
  isOffloadPreview,
  OFFLOAD_TOOL_NAME,
  offloadedDetailNotice,
  offloadPagebackHint,
  PERSISTED_OUTPUT_PREFIX,
  unescapeRefAttribute,
} from '../../src/offload/preview.js';

describe('buildPreview', () => {
  const full = 'H'.repeat(50) + 'M'.repeat(1000) + 'T'.repeat(30);

  it('shows head and tail around a line that says how much is missing and where it is', () => {
    const preview = buildPreview(full, 'tr_s~c', { head: 50, tail: 30 });
    const lines = preview.split('\n');
    expect(lines[0]).toBe('<persisted-output ref="tr_s~c" chars="1080">');
    expect(lines[1]).toBe('H'.repeat(50));
    expect(lines[2]).toMatch(
      /^\u2026\[1000 of 1080 characters not shown\. The full output is kept in this run's tool-result store under the ref above\./,
    );
    expect(lines[2]).toContain(`call ${OFFLOAD_TOOL_NAME} with ref "tr_s~c"`);
    expect(lines[3]).toBe('T'.repeat(30));
    expect(lines[4]).toBe('</persisted-output>');
    expect(isOffloadPreview(preview)).toBe(true);
    expect(preview.startsWith(PERSISTED_OUTPUT_PREFIX)).toBe(true);
  });

  it('is deterministic and never splits a surrogate pair at the head or tail edge', () => {
    const text = '\ud83d\ude00'.repeat(100);
    const a = buildPreview(text, 'r', { head: 5, tail: 5 });
    expect(a).toBe(buildPreview(text, 'r', { head: 5, tail: 5 }));
    const [, head, , tail] = a.split('\n');
    expect(head).toBe('\ud83d\ude00'.repeat(2));
    expect(tail).toBe('\ud83d\ude00'.repeat(2));
  });

  it('shows a short text whole, without a truncation line', () => {
    expect(buildPreview('abc', 'r', { head: 10, tail: 10 })).toBe('<persisted-output ref="r" chars="3">\nabc\n</persisted-output>');
  });

  it('escapes a ref that would break the marker attribute', () => {
    const ref = 'a"b<c>&d';
    expect(buildPreview('x'.repeat(10), ref, { head: 1, tail: 1 })).toContain('ref="a&quot;b&lt;c&gt;&amp;d"');
    expect(unescapeRefAttribute(escapeRefAttribute(ref))).toBe(ref);
  });
});

describe('offloadPagebackHint', () => {
  it('suggests the page-back tool, or says plainly that it is not available', () => {
    expect(offloadPagebackHint('r1', 'preview')).toContain(`call ${OFFLOAD_TOOL_NAME} with ref "r1"`);
    expect(offloadPagebackHint('r1', 'cleared')).toBe(`To read it, call ${OFFLOAD_TOOL_NAME} with ref "r1".`);
    expect(offloadPagebackHint('r1', 'preview', new Set([OFFLOAD_TOOL_NAME]))).toBe(offloadPagebackHint('r1', 'preview'));
    const unavailable = offloadPagebackHint('r1', 'preview', new Set(['Other']));
    expect(unavailable).toContain('not available');
    expect(unavailable).not.toContain('call ');
  });
});

describe('isOffloadedDetailReplacement', () => {
  it('recognizes the notice at the start or the start of a line, and nothing else', () => {
    const notice = offloadedDetailNotice('r9', 123);
    expect(isOffloadedDetailReplacement(notice)).toBe(true);
    expect(isOffloadedDetailReplacement(`head of the value\n${notice}`)).toBe(true);
    expect(isOffloadedDetailReplacement(`inline ${notice}`)).toBe(false);
    expect(isOffloadedDetailReplacement('plain text')).toBe(false);
    expect(isOffloadedDetailReplacement(42)).toBe(false);
  });
});
