import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { canonicalJson } from '../../src/core/canonical-json.js';
import {
  buildResumeJournalNote,
  classifyToolCallJournal,
  findCompletedJournalEntry,
  isJournalEmpty,
  journalFromReceipts,
  JOURNAL_NOTE_MAX_INPUT_CHARS,
  JOURNAL_NOTE_MAX_RESULT_CHARS,
  type JournalEvent,
  type JournalReceiptRecord,
  type ToolCallJournal,
} from '../../src/core/journal.js';

const start = (tool: string, input?: unknown): JournalEvent =>
  input === undefined ? { type: 'tool_start', tool } : { type: 'tool_start', tool, input };
const done = (tool: string, result: string, input?: unknown): JournalEvent =>
  input === undefined ? { type: 'tool_done', tool, result } : { type: 'tool_done', tool, input, result };
const clear: JournalEvent = { type: 'clear' };

const sig = (input: unknown): string => createHash('sha256').update(canonicalJson(input), 'utf8').digest('hex').slice(0, 8);

/** What a journal says, without the shared input references. */
const summary = (j: ToolCallJournal) => ({
  completed: j.completed.map((e) => [e.key, e.result]),
  interrupted: j.interrupted.map((e) => e.key),
});

describe('classifyToolCallJournal', () => {
  it('returns an empty journal for no events and for events that are not tool events', () => {
    expect(classifyToolCallJournal([])).toEqual({ completed: [], interrupted: [] });
    const j = classifyToolCallJournal([
      { type: 'text', text: 'hello' },
      { type: 'usage', tokens: 12 },
      { type: 'tool_start', tool: 42 },
      { type: 'tool_done', result: 'no tool' },
      null as unknown as JournalEvent,
    ]);
    expect(j).toEqual({ completed: [], interrupted: [] });
  });

  it('pairs a start with its done and keeps the start input and the result', () => {
    const j = classifyToolCallJournal([start('send_email', { to: 'a@example.test' }), done('send_email', 'sent')]);
    expect(j.interrupted).toEqual([]);
    expect(j.completed).toEqual([
      {
        key: `send_email(${sig({ to: 'a@example.test' })})@0`,
        tool: 'send_email',
        input: { to: 'a@example.test' },
        order: 0,
        result: 'sent',
      },
    ]);
  });

  describe('a done without input (older ledgers)', () => {
    it('closes the oldest open call of the same tool, whatever its input', () => {
      const j = classifyToolCallJournal([
        start('send_email', { to: 'first' }),
        start('send_email', { to: 'second' }),
        done('send_email', 'r1'),
      ]);
      expect(j.completed.map((e) => [e.input, e.result])).toEqual([[{ to: 'first' }, 'r1']]);
      expect(j.interrupted.map((e) => e.input)).toEqual([{ to: 'second' }]);
    });

    it('keeps a separate queue per tool', () => {
      const j = classifyToolCallJournal([
        start('a', 1),
        start('b', 2),
        start('a', 3),
        start('b', 4),
        done('b', 'rb1'),
        done('a', 'ra1'),
        done('b', 'rb2'),
      ]);
      expect(j.completed.map((e) => [e.tool, e.input, e.result])).toEqual([
        ['a', 1, 'ra1'],
        ['b', 2, 'rb1'],
        ['b', 4, 'rb2'],
      ]);
      expect(j.interrupted.map((e) => [e.tool, e.input])).toEqual([['a', 3]]);
    });

    it('closes a start that recorded no input', () => {
      const j = classifyToolCallJournal([start('ping'), done('ping', 'pong')]);
      expect(j.completed).toEqual([{ key: 'ping(-)@0', tool: 'ping', order: 0, result: 'pong' }]);
      expect('input' in j.completed[0]!).toBe(false);
    });
  });

  describe('a done with input', () => {
    it('closes the open call with the canonically equal input, not the oldest', () => {
      const j = classifyToolCallJournal([
        start('send_email', { to: 'first' }),
        start('send_email', { to: 'second' }),
        done('send_email', 'r2', { to: 'second' }),
      ]);
      expect(j.completed.map((e) => [e.order, e.result])).toEqual([[1, 'r2']]);
      expect(j.interrupted.map((e) => e.order)).toEqual([0]);
    });

    it('ignores key order inside the input', () => {
      const j = classifyToolCallJournal([
        start('t', { a: 1, b: { c: [1, 2], d: 'x' } }),
        done('t', 'ok', { b: { d: 'x', c: [1, 2] }, a: 1 }),
      ]);
      expect(j.completed).toHaveLength(1);
      expect(j.interrupted).toHaveLength(0);
    });

    it('closes the oldest of several calls with equal input', () => {
      const j = classifyToolCallJournal([start('t', { n: 1 }), start('t', { n: 1 }), done('t', 'r', { n: 1 })]);
      expect(j.completed.map((e) => e.order)).toEqual([0]);
      expect(j.interrupted.map((e) => e.order)).toEqual([1]);
    });

    it('closes nothing when no open call of that tool has that input (no positional fallback)', () => {
      const j = classifyToolCallJournal([start('t', { n: 1 }), done('t', 'r', { n: 2 })]);
      expect(j.completed).toEqual([]);
      expect(j.interrupted.map((e) => e.input)).toEqual([{ n: 1 }]);
    });

    it('does not close a call of another tool with the same input', () => {
      const j = classifyToolCallJournal([start('a', { n: 1 }), done('b', 'r', { n: 1 })]);
      expect(j.completed).toEqual([]);
      expect(j.interrupted).toHaveLength(1);
    });

    it('does not close a start that recorded no input', () => {
      const j = classifyToolCallJournal([start('t'), done('t', 'r', { n: 1 })]);
      expect(j.completed).toEqual([]);
      expect(j.interrupted).toHaveLength(1);
    });
  });

  it('ignores a done that has no open call to close', () => {
    const j = classifyToolCallJournal([done('t', 'early'), start('t', 1), done('t', 'r'), done('t', 'late')]);
    expect(j.completed.map((e) => e.result)).toEqual(['r']);
    expect(j.interrupted).toEqual([]);
  });

  it('reports calls left open as interrupted, sorted by order', () => {
    const j = classifyToolCallJournal([start('b', 1), start('a', 2), start('b', 3), done('b', 'r', 3)]);
    expect(j.completed.map((e) => e.order)).toEqual([2]);
    expect(j.interrupted.map((e) => [e.tool, e.order])).toEqual([
      ['b', 0],
      ['a', 1],
    ]);
  });

  describe('clear', () => {
    it('forgets completed and open calls alike', () => {
      const j = classifyToolCallJournal([start('a', 1), done('a', 'r'), start('b', 2), clear]);
      expect(j).toEqual({ completed: [], interrupted: [] });
    });

    it('restarts the order count, and a done after it cannot close a start before it', () => {
      const j = classifyToolCallJournal([start('a', 1), start('a', 2), clear, done('a', 'stale'), start('c', 3)]);
      expect(j.completed).toEqual([]);
      expect(j.interrupted.map((e) => [e.tool, e.order, e.key])).toEqual([['c', 0, `c(${sig(3)})@0`]]);
    });
  });

  it('converts a non-string result to JSON rather than dropping it', () => {
    const events = [start('t', 1), { type: 'tool_done', tool: 't', result: { id: 7 } }] as JournalEvent[];
    expect(classifyToolCallJournal(events).completed[0]!.result).toBe('{"id":7}');
  });

  describe('inputs with no canonical form', () => {
    const cyclic: Record<string, unknown> = { name: 'loop' };
    cyclic['self'] = cyclic;
    const throwing = {
      toJSON() {
        throw new Error('boom');
      },
    };

    it.each([
      ['a BigInt', { n: 10n }],
      ['a cycle', cyclic],
      ['a Map', new Map([[1, 2]])],
      ['a throwing toJSON', throwing],
    ])('never throw, and %s input equals nothing', (_label, input) => {
      const j = classifyToolCallJournal([start('t', input), done('t', 'r', input)]);
      expect(j.completed).toEqual([]);
      expect(j.interrupted.map((e) => e.key)).toEqual(['t(?)@0']);
      expect(j.interrupted[0]!.input).toBe(input);
    });

    it('can still be closed by a done without input', () => {
      const j = classifyToolCallJournal([start('t', { n: 10n }), done('t', 'r')]);
      expect(j.completed.map((e) => [e.key, e.result])).toEqual([['t(?)@0', 'r']]);
    });
  });

  it('gives readable keys that are unique and the same on every run', () => {
    const events = [start('send_email', { to: 'x' }), start('send_email', { to: 'x' }), start('log'), done('log', 'ok')];
    const a = classifyToolCallJournal(events);
    const b = classifyToolCallJournal(events);
    expect(summary(a)).toEqual(summary(b));
    const keys = [...a.completed, ...a.interrupted].map((e) => e.key);
    expect(new Set(keys).size).toBe(keys.length);
    expect(keys).toEqual(['log(-)@2', `send_email(${sig({ to: 'x' })})@0`, `send_email(${sig({ to: 'x' })})@1`]);
    expect(keys[1]).toMatch(/^send_email\([0-9a-f]{8}\)@0$/);
  });

  it('does not mutate the events', () => {
    const events = Object.freeze([
      Object.freeze(start('a', Object.freeze({ n: 1 }))),
      Object.freeze(done('a', 'r')),
      Object.freeze(start('b', Object.freeze({ n: 2 }))),
    ]);
    expect(() => classifyToolCallJournal(events)).not.toThrow();
  });
});

describe('isJournalEmpty', () => {
  it('is true only when both lists are empty', () => {
    expect(isJournalEmpty({ completed: [], interrupted: [] })).toBe(true);
    expect(isJournalEmpty(classifyToolCallJournal([start('a', 1)]))).toBe(false);
    expect(isJournalEmpty(classifyToolCallJournal([start('a', 1), done('a', 'r')]))).toBe(false);
    expect(isJournalEmpty(classifyToolCallJournal([start('a', 1), done('a', 'r'), clear]))).toBe(true);
  });
});

describe('findCompletedJournalEntry', () => {
  const journal = classifyToolCallJournal([
    start('send_email', { to: 'x', body: 'hi' }),
    start('create_ticket', { title: 'T' }),
    start('send_email', { to: 'x', body: 'hi' }),
    start('send_email', { to: 'y', body: 'hi' }),
    start('notify'),
    done('send_email', 'first'),
    done('create_ticket', 'ticket 9'),
    done('send_email', 'second'),
    done('notify', 'done'),
  ]);

  it('finds a completed call by tool name and canonical input, regardless of position or key order', () => {
    const hit = findCompletedJournalEntry(journal, 'create_ticket', { title: 'T' });
    expect(hit?.result).toBe('ticket 9');
    expect(findCompletedJournalEntry(journal, 'send_email', { body: 'hi', to: 'x' })?.result).toBe('first');
  });

  it('returns the first unconsumed entry, and reads the consumed set without changing it', () => {
    const consumed = new Set<string>();
    const first = findCompletedJournalEntry(journal, 'send_email', { to: 'x', body: 'hi' }, consumed);
    expect(first?.result).toBe('first');
    expect(consumed.size).toBe(0);
    consumed.add(first!.key);
    const second = findCompletedJournalEntry(journal, 'send_email', { to: 'x', body: 'hi' }, consumed);
    expect(second?.result).toBe('second');
    consumed.add(second!.key);
    expect(findCompletedJournalEntry(journal, 'send_email', { to: 'x', body: 'hi' }, consumed)).toBeUndefined();
  });

  it('finds nothing for another input, another tool, or an interrupted call', () => {
    expect(findCompletedJournalEntry(journal, 'send_email', { to: 'z', body: 'hi' })).toBeUndefined();
    expect(findCompletedJournalEntry(journal, 'send_sms', { to: 'x', body: 'hi' })).toBeUndefined();
    // The call to y never finished: the legacy dones closed the two calls to x.
    expect(findCompletedJournalEntry(journal, 'send_email', { to: 'y', body: 'hi' })).toBeUndefined();
    expect(journal.interrupted.map((e) => e.input)).toEqual([{ to: 'y', body: 'hi' }]);
  });

  it('never matches an entry without input, nor a lookup without a canonical input', () => {
    expect(journal.completed.some((e) => e.tool === 'notify')).toBe(true);
    expect(findCompletedJournalEntry(journal, 'notify', undefined)).toBeUndefined();
    expect(findCompletedJournalEntry(journal, 'notify', {})).toBeUndefined();
    expect(findCompletedJournalEntry(journal, 'notify', null)).toBeUndefined();
    expect(findCompletedJournalEntry(journal, 'create_ticket', { title: 'T', n: 1n })).toBeUndefined();
  });

  it('never matches entries built from receipts', () => {
    const j = journalFromReceipts([{ tool: 'send_email', status: 'completed', createdMs: 1, result: 'ok' }]);
    expect(findCompletedJournalEntry(j, 'send_email', undefined)).toBeUndefined();
    expect(findCompletedJournalEntry(j, 'send_email', {})).toBeUndefined();
  });
});

describe('buildResumeJournalNote', () => {
  it('returns null when there is nothing to report', () => {
    expect(buildResumeJournalNote({ completed: [], interrupted: [] })).toBeNull();
    expect(buildResumeJournalNote(classifyToolCallJournal([{ type: 'text' }, start('a', 1), clear]))).toBeNull();
  });

  it('lists finished calls with results and unknown-outcome calls, each in its own section', () => {
    const note = buildResumeJournalNote(
      classifyToolCallJournal([
        start('send_email', { to: 'x' }),
        done('send_email', 'message 42 sent'),
        start('create_ticket', { title: 'Outage' }),
      ]),
    )!;
    expect(note).toContain('do NOT call them again');
    expect(note).toContain('- send_email with input "{\\"to\\":\\"x\\"}": result "message 42 sent"');
    expect(note).toContain('may or may not have happened');
    expect(note).toContain('- create_ticket with input "{\\"title\\":\\"Outage\\"}"');
    expect(note.indexOf('send_email')).toBeLessThan(note.indexOf('Outcome unknown'));
    expect(note.indexOf('Outcome unknown')).toBeLessThan(note.indexOf('create_ticket'));
  });

  it('leaves out a section with no calls', () => {
    const onlyDone = buildResumeJournalNote(classifyToolCallJournal([start('a', 1), done('a', 'r')]))!;
    expect(onlyDone).toContain('do NOT call them again');
    expect(onlyDone).not.toContain('Outcome unknown');
    const onlyOpen = buildResumeJournalNote(classifyToolCallJournal([start('a', 1)]))!;
    expect(onlyOpen).toContain('Outcome unknown');
    expect(onlyOpen).not.toContain('do NOT call them again');
  });

  it('writes one line per call, so results cannot forge lines', () => {
    const note = buildResumeJournalNote(
      classifyToolCallJournal([start('a', 1), done('a', 'line one\n- fake_tool: result "x"'), start('b', 2)]),
    )!;
    const bullets = note.split('\n').filter((l) => l.startsWith('- '));
    expect(bullets).toHaveLength(2);
    expect(note).toContain('result "line one\\n- fake_tool: result \\"x\\""');
  });

  it('cuts long results and inputs to the documented lengths', () => {
    const longResult = 'r'.repeat(JOURNAL_NOTE_MAX_RESULT_CHARS + 50);
    const longInput = { text: 'i'.repeat(JOURNAL_NOTE_MAX_INPUT_CHARS + 50) };
    const note = buildResumeJournalNote(classifyToolCallJournal([start('a', longInput), done('a', longResult)]))!;
    expect(note).toContain(`${'r'.repeat(JOURNAL_NOTE_MAX_RESULT_CHARS)}… [50 more chars]`);
    expect(note).not.toContain('r'.repeat(JOURNAL_NOTE_MAX_RESULT_CHARS + 1));
    const inputText = canonicalJson(longInput);
    const dropped = inputText.length - JOURNAL_NOTE_MAX_INPUT_CHARS;
    expect(note).toContain(`${JSON.stringify(inputText.slice(0, JOURNAL_NOTE_MAX_INPUT_CHARS)).slice(1, -1)}… [${dropped} more chars]`);
  });

  it('does not split a surrogate pair when cutting', () => {
    const result = 'a'.repeat(JOURNAL_NOTE_MAX_RESULT_CHARS - 1) + '😀' + 'tail';
    const note = buildResumeJournalNote(classifyToolCallJournal([start('a', 1), done('a', result)]))!;
    expect(note).toContain(`${'a'.repeat(JOURNAL_NOTE_MAX_RESULT_CHARS - 1)}… [6 more chars]`);
    expect(note).not.toMatch(/\\ud83d/i);
  });

  it('handles calls without input, without result, with unserializable input, and with odd tool names', () => {
    const journal: ToolCallJournal = {
      completed: [{ key: 'k0', tool: 'ping', order: 0 }],
      interrupted: [
        { key: 'k1', tool: 'bad\nname', order: 1, input: { n: 1n } },
        { key: 'k2', tool: 'plain', order: 2 },
      ],
    };
    const note = buildResumeJournalNote(journal)!;
    expect(note).toContain('- ping: no result recorded');
    expect(note).toContain('- "bad\\nname" with input "(not serializable)"');
    expect(note).toContain('\n- plain\n'.trimEnd());
    expect(note.split('\n').filter((l) => l.startsWith('- '))).toHaveLength(3);
  });
});

describe('journalFromReceipts', () => {
  const r = (tool: string, status: JournalReceiptRecord['status'], createdMs: number, extra: Partial<JournalReceiptRecord> = {}) => ({
    tool,
    status,
    createdMs,
    ...extra,
  });

  it('returns an empty journal for no receipts', () => {
    expect(journalFromReceipts([])).toEqual({ completed: [], interrupted: [] });
  });

  it('reports completed receipts and running receipts with an expired lease, ordered by creation', () => {
    const j = journalFromReceipts([
      r('c', 'running', 300, { leaseExpired: true }),
      r('a', 'completed', 100, { result: 'done a' }),
      r('b', 'completed', 200, { result: { id: 3 } }),
    ]);
    expect(j).toEqual({
      completed: [
        { key: 'a(-)@0', tool: 'a', order: 0, result: 'done a' },
        { key: 'b(-)@1', tool: 'b', order: 1, result: '{"id":3}' },
      ],
      interrupted: [{ key: 'c(-)@2', tool: 'c', order: 2 }],
    });
    for (const e of [...j.completed, ...j.interrupted]) expect('input' in e).toBe(false);
  });

  it('leaves out failed receipts and running receipts with a live lease, but counts them in the order', () => {
    const j = journalFromReceipts([
      r('failed', 'failed', 1),
      r('live', 'running', 2, { leaseExpired: false }),
      r('unknown_lease', 'running', 3),
      r('ok', 'completed', 4, { result: 'x' }),
    ]);
    expect(j.completed.map((e) => [e.tool, e.order])).toEqual([['ok', 3]]);
    expect(j.interrupted).toEqual([]);
  });

  it('reports a running receipt the store marked ambiguous as interrupted, not one resolved as failed or completed', () => {
    const j = journalFromReceipts([
      r('a', 'running', 1, { ambiguousMs: 50, leaseExpired: false }),
      r('b', 'failed', 2, { ambiguousMs: 60 }),
      r('c', 'failed', 3, { ambiguousMs: null }),
      r('d', 'completed', 4, { ambiguousMs: 70, result: 'fine' }),
    ]);
    expect(j.interrupted.map((e) => e.tool)).toEqual(['a']);
    expect(j.completed.map((e) => e.tool)).toEqual(['d']);
  });

  it('keeps the given order for equal creation times and puts non-finite times last', () => {
    const j = journalFromReceipts([
      r('nan', 'completed', Number.NaN),
      r('first', 'completed', 5),
      r('second', 'completed', 5),
      r('early', 'completed', -1),
    ]);
    expect(j.completed.map((e) => e.tool)).toEqual(['early', 'first', 'second', 'nan']);
  });

  it('stringifies results: strings as is, other values as JSON, absent as no result', () => {
    const cyclic: Record<string, unknown> = {};
    cyclic['self'] = cyclic;
    const j = journalFromReceipts([
      r('s', 'completed', 1, { result: 'plain "text"' }),
      r('n', 'completed', 2, { result: 0 }),
      r('z', 'completed', 3, { result: null }),
      r('u', 'completed', 4),
      r('c', 'completed', 5, { result: cyclic }),
    ]);
    expect(j.completed.map((e) => e.result)).toEqual(['plain "text"', '0', 'null', undefined, '[result has no JSON form]']);
    expect('result' in j.completed[3]!).toBe(false);
  });

  it('feeds the resume note', () => {
    const note = buildResumeJournalNote(
      journalFromReceipts([r('charge_card', 'completed', 1, { result: 'charged' }), r('ship', 'running', 2, { leaseExpired: true })]),
    )!;
    expect(note).toContain('- charge_card: result "charged"');
    expect(note).toMatch(/Outcome unknown[^\n]*\n- ship$/);
  });
});
