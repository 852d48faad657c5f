import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { canonicalJson } from '../../src/core/canonical-json.js';
import {
  buildResumeJournalNote,
  classifyToolCallJournal,
  findCompletedJournalEntry,
  isJournalEmpty,
  journalFromReceipts,
  type JournalEvent,
  type JournalReceiptRecord,
  type ToolCallJournal,
} from '../../src/core/journal.js';

const RUNS = { numRuns: 1000 };

/** A ledger drawn from a small pool of tools and inputs, so that starts and dones often pair up. */
type Step =
  | { kind: 'start'; tool: string; input: number | null }
  | { kind: 'done'; tool: string; input: number | null; result: string }
  | { kind: 'clear' }
  | { kind: 'other' };

const toolArb = fc.constantFrom('a', 'b', 'c');
const inputArb = fc.oneof(
  fc.dictionary(fc.string({ maxLength: 3 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 4 }),
  fc.jsonValue({ maxDepth: 3 }),
);
const stepArb: fc.Arbitrary<Step> = fc.oneof(
  { weight: 6, arbitrary: fc.record({ kind: fc.constant('start' as const), tool: toolArb, input: fc.option(fc.nat(3)) }) },
  {
    weight: 6,
    arbitrary: fc.record({
      kind: fc.constant('done' as const),
      tool: toolArb,
      input: fc.option(fc.nat(3)),
      result: fc.string({ maxLength: 8 }),
    }),
  },
  { weight: 1, arbitrary: fc.constant({ kind: 'clear' as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'other' as const }) },
);
const ledgerArb = fc.record({
  pool: fc.array(inputArb, { minLength: 4, maxLength: 4 }),
  steps: fc.array(stepArb, { minLength: 4, maxLength: 30, size: 'medium' }),
});

function toEvents(pool: readonly unknown[], steps: readonly Step[]): JournalEvent[] {
  return steps.map((s): JournalEvent => {
    switch (s.kind) {
      case 'start':
        return s.input === null ? { type: 'tool_start', tool: s.tool } : { type: 'tool_start', tool: s.tool, input: pool[s.input] };
      case 'done':
        return s.input === null
          ? { type: 'tool_done', tool: s.tool, result: s.result }
          : { type: 'tool_done', tool: s.tool, input: pool[s.input], result: s.result };
      case 'clear':
        return { type: 'clear' };
      case 'other':
        return { type: 'assistant_text', text: 'thinking' };
    }
  });
}

/** Rebuild a JSON value with the keys of every object in a seeded, shuffled order. */
function shuffleKeys(value: unknown, seed: number): unknown {
  let state = seed >>> 0 || 1;
  const next = (): number => {
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    return (state >>> 0) / 0x1_0000_0000;
  };
  const walk = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(walk);
    if (v === null || typeof v !== 'object') return v;
    const keys = Object.keys(v);
    for (let i = keys.length - 1; i > 0; i--) {
      const j = Math.floor(next() * (i + 1));
      [keys[i], keys[j]] = [keys[j]!, keys[i]!];
    }
    const out: Record<string, unknown> = {};
    // defineProperty, so a generated "__proto__" key stays an ordinary own key.
    for (const k of keys) {
      Object.defineProperty(out, k, {
        value: walk((v as Record<string, unknown>)[k]),
        enumerable: true,
        writable: true,
        configurable: true,
      });
    }
    return out;
  };
  return walk(value);
}

function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const k of Object.keys(value)) deepFreeze((value as Record<string, unknown>)[k]);
  }
  return value;
}

/** What a journal says, without the shared input references. */
const summary = (j: ToolCallJournal) => ({
  completed: j.completed.map((e) => ({ key: e.key, tool: e.tool, order: e.order, result: e.result })),
  interrupted: j.interrupted.map((e) => ({ key: e.key, tool: e.tool, order: e.order })),
});

function startsAfterLastClear(events: readonly JournalEvent[]): number {
  let n = 0;
  for (const e of events) {
    if (e.type === 'clear') n = 0;
    else if (e.type === 'tool_start' && typeof (e as Record<string, unknown>)['tool'] === 'string') n += 1;
  }
  return n;
}

describe('classifyToolCallJournal properties', () => {
  it('is deterministic and pure: equal journals from the same events, which it never changes', () => {
    fc.assert(
      fc.property(ledgerArb, ({ pool, steps }) => {
        const events = toEvents(pool, steps);
        const before = canonicalJson(events);
        deepFreeze(events);
        const a = classifyToolCallJournal(events);
        const b = classifyToolCallJournal(events);
        expect(b).toEqual(a);
        expect(a).not.toBe(b);
        expect(canonicalJson(events)).toBe(before);
      }),
      RUNS,
    );
  });

  it('puts every start after the last clear in exactly one list, with unique keys and orders 0..n-1', () => {
    fc.assert(
      fc.property(ledgerArb, ({ pool, steps }) => {
        const events = toEvents(pool, steps);
        const j = classifyToolCallJournal(events);
        const n = startsAfterLastClear(events);
        expect(j.completed.length + j.interrupted.length).toBe(n);
        const all = [...j.completed, ...j.interrupted];
        expect(new Set(all.map((e) => e.key)).size).toBe(n);
        expect(all.map((e) => e.order).sort((x, y) => x - y)).toEqual([...Array(n).keys()]);
        for (const list of [j.completed, j.interrupted]) {
          for (let i = 1; i < list.length; i++) expect(list[i - 1]!.order).toBeLessThan(list[i]!.order);
        }
        expect(isJournalEmpty(j)).toBe(n === 0);
      }),
      RUNS,
    );
  });

  it('matches the same way whatever the key order inside inputs', () => {
    fc.assert(
      fc.property(ledgerArb, fc.integer(), fc.integer(), ({ pool, steps }, seedA, seedB) => {
        // Starts and dones see independently shuffled copies of the same inputs.
        const plain = classifyToolCallJournal(toEvents(pool, steps));
        const poolA = pool.map((v) => shuffleKeys(v, seedA));
        const poolB = pool.map((v) => shuffleKeys(v, seedB));
        const mixed = steps.map((s) => toEvents(s.kind === 'done' ? poolB : poolA, [s])[0]!);
        const shuffled = classifyToolCallJournal(mixed);
        expect(summary(shuffled)).toEqual(summary(plain));

        for (const e of plain.completed) {
          if (e.input === undefined) continue;
          const found = findCompletedJournalEntry(shuffled, e.tool, shuffleKeys(e.input, seedA ^ seedB));
          const expected = findCompletedJournalEntry(plain, e.tool, e.input);
          expect(found?.key).toBe(expected?.key);
        }
      }),
      RUNS,
    );
  });

  it('lets repeated lookups with a consumed set claim each matching completion exactly once', () => {
    fc.assert(
      fc.property(ledgerArb, fc.constantFrom('a', 'b', 'c'), fc.nat(3), ({ pool, steps }, tool, idx) => {
        const j = classifyToolCallJournal(toEvents(pool, steps));
        const input = pool[idx];
        const wanted = canonicalJson(input);
        const expected = j.completed
          .filter((e) => e.tool === tool && e.input !== undefined && canonicalJson(e.input) === wanted)
          .map((e) => e.key);
        const consumed = new Set<string>();
        const claimed: string[] = [];
        for (;;) {
          const hit = findCompletedJournalEntry(j, tool, input, consumed);
          if (hit === undefined) break;
          expect(consumed.has(hit.key)).toBe(false);
          consumed.add(hit.key);
          claimed.push(hit.key);
        }
        expect(claimed).toEqual(expected);
      }),
      RUNS,
    );
  });

  it('never throws on arbitrary ledger content, and still counts only well-formed starts', () => {
    const junkInput = fc.anything({ withBigInt: true, withMap: true, withSet: true, withDate: true, withBoxedValues: true });
    const junkEvent = fc.oneof(
      fc.record(
        {
          type: fc.constantFrom('tool_start', 'tool_done', 'clear', 'other'),
          tool: fc.oneof(toolArb, fc.anything()),
          input: junkInput,
          result: fc.anything({ withBigInt: true }),
        },
        { requiredKeys: ['type'] },
      ),
      fc.anything(),
    );
    fc.assert(
      fc.property(fc.array(junkEvent, { maxLength: 25 }), (raw) => {
        const events = raw as JournalEvent[];
        const j = classifyToolCallJournal(events);
        const wellFormed = events.filter((e) => typeof e === 'object' && e !== null && typeof e.type === 'string');
        expect(j.completed.length + j.interrupted.length).toBe(startsAfterLastClear(wellFormed));
        const note = buildResumeJournalNote(j);
        expect(note === null).toBe(isJournalEmpty(j));
      }),
      RUNS,
    );
  });
});

describe('buildResumeJournalNote properties', () => {
  it('is null exactly for an empty journal, and otherwise has one bullet line per call', () => {
    fc.assert(
      fc.property(ledgerArb, fc.array(fc.string({ unit: 'binary', maxLength: 400 }), { maxLength: 30 }), ({ pool, steps }, results) => {
        // Results with newlines, quotes and lone surrogates must stay on their line.
        const events = toEvents(pool, steps).map((e, i) =>
          e.type === 'tool_done' ? { ...e, result: results[i % Math.max(results.length, 1)] ?? '' } : e,
        );
        const j = classifyToolCallJournal(events);
        const note = buildResumeJournalNote(j);
        if (isJournalEmpty(j)) {
          expect(note).toBeNull();
          return;
        }
        expect(note).not.toBeNull();
        const bullets = note!.split('\n').filter((l) => l.startsWith('- '));
        expect(bullets).toHaveLength(j.completed.length + j.interrupted.length);
      }),
      RUNS,
    );
  });
});

describe('journalFromReceipts properties', () => {
  const receiptArb: fc.Arbitrary<JournalReceiptRecord> = fc.record(
    {
      tool: fc.string({ maxLength: 6 }),
      status: fc.constantFrom('running' as const, 'completed' as const, 'failed' as const),
      createdMs: fc.oneof(fc.integer({ min: 0, max: 20 }), fc.double()),
      result: fc.jsonValue({ maxDepth: 2 }),
      ambiguousMs: fc.option(fc.integer({ min: 0, max: 100 })),
      leaseExpired: fc.boolean(),
    },
    { requiredKeys: ['tool', 'status', 'createdMs'] },
  );

  it('reports completed and unknown-outcome receipts only, in creation order, with unique orders', () => {
    fc.assert(
      fc.property(fc.array(receiptArb, { maxLength: 20 }), (records) => {
        const j = journalFromReceipts(records);
        const isUnknown = (r: JournalReceiptRecord): boolean =>
          r.status === 'running' && (typeof r.ambiguousMs === 'number' || r.leaseExpired === true);
        expect(j.completed).toHaveLength(records.filter((r) => r.status === 'completed').length);
        expect(j.interrupted).toHaveLength(records.filter(isUnknown).length);
        const all = [...j.completed, ...j.interrupted];
        expect(new Set(all.map((e) => e.order)).size).toBe(all.length);
        for (const e of all) {
          expect(e.order).toBeLessThan(records.length);
          expect('input' in e).toBe(false);
        }
        // Creation time of the call at each order, with non-finite times last and ties in input order.
        const timeAt = records
          .map((r, i) => ({ ms: Number.isFinite(r.createdMs) ? r.createdMs : Infinity, i }))
          .sort((x, y) => (x.ms < y.ms ? -1 : x.ms > y.ms ? 1 : x.i - y.i))
          .map((x) => x.ms);
        const orders = all.map((e) => e.order).sort((x, y) => x - y);
        for (let i = 1; i < orders.length; i++) expect(timeAt[orders[i - 1]!]!).toBeLessThanOrEqual(timeAt[orders[i]!]!);
        expect(journalFromReceipts(records)).toEqual(j);
      }),
      RUNS,
    );
  });
});
