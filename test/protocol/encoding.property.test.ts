/**
 * The canonical encoding's contract, on states reached by random walks
 * through every scenario: encoding what it decodes gives the same bytes;
 * which worker is which, and the values of minted ids, do not change them;
 * and the state it decodes to allows exactly the moves the original does,
 * to states that encode alike (so keeping one of two states that encode
 * alike loses nothing). And the fingerprint set keeps what a set keeps.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { FingerprintSet, fingerprint } from '../../protocol/checker/fingerprint-set.js';
import { applyAction, enabledActions } from '../../protocol/model/actions.js';
import { decodeState, encodeState } from '../../protocol/model/encoding.js';
import { PROTOCOL_HOOKS, type ModelContext } from '../../protocol/model/hooks.js';
import { cloneState, initialState, type ProtocolState } from '../../protocol/model/state.js';
import { SCENARIOS } from '../../protocol/scenarios.js';

/** A state reached from a scenario's start by the moves `picks` choose (each modulo the moves allowed then). */
function walkTo(ctx: ModelContext, picks: readonly number[]): ProtocolState {
  let state = initialState(ctx.scenario);
  for (const pick of picks) {
    const actions = enabledActions(state, ctx);
    if (actions.length === 0) break;
    state = applyAction(state, ctx, actions[pick % actions.length]!).next;
  }
  return state;
}

const reached = fc
  .record({ scenario: fc.nat({ max: SCENARIOS.length - 1 }), picks: fc.array(fc.nat(), { maxLength: 40 }) })
  .map(({ scenario, picks }) => {
    const ctx: ModelContext = { scenario: SCENARIOS[scenario]!.scenario, hooks: PROTOCOL_HOOKS };
    return { ctx, state: walkTo(ctx, picks) };
  });

const bytes = (s: ProtocolState): string => Buffer.from(encodeState(s).bytes).toString('hex');

/** `s` with its workers in another order. */
function permuted(s: ProtocolState, order: readonly number[]): ProtocolState {
  const copy = cloneState(s);
  copy.workers = order.map((i) => copy.workers[i]!);
  return copy;
}

/** `s` with every minted id mapped by an order-keeping function: epochs and tokens by `id`, reservations by `reservation`. */
function renamed(s: ProtocolState, id: (n: number) => number, reservation: (n: number) => number): ProtocolState {
  const copy = cloneState(s);
  const ep = (n: number) => (n > 0 ? id(n) : n);
  const res = (n: number) => (n > 0 ? reservation(n) : n);
  for (const r of copy.receipts) {
    r.epoch = ep(r.epoch);
    r.token = ep(r.token);
    r.approvalEpoch = ep(r.approvalEpoch);
    r.limitHolder = res(r.limitHolder);
  }
  copy.forms = copy.forms.map(ep);
  copy.rows = copy.rows.map((rows) => rows.map((row) => ({ ...row, epoch: ep(row.epoch) })));
  copy.ghosts = copy.ghosts.map((g) => ({ ...g, epoch: ep(g.epoch) }));
  copy.limit.reservations = copy.limit.reservations.map((r) => ({ ...r, id: res(r.id) }));
  copy.limit.pendingFor = copy.limit.pendingFor.map(res);
  copy.limit.bindings = new Map([...copy.limit.bindings].map(([key, value]) => [res(key), value]));
  for (const w of copy.workers) {
    w.epoch = ep(w.epoch);
    w.seenEpoch = ep(w.seenEpoch);
    w.token = ep(w.token);
    w.reservation = res(w.reservation);
    w.settling = res(w.settling);
    w.expired = w.expired.map(res);
  }
  copy.nextId = copy.nextId.map(id);
  copy.nextReservation = reservation(copy.nextReservation);
  for (const w of copy.workers) if (w.ticket > 0) w.ticket = id(w.ticket);
  copy.nextTicket = id(copy.nextTicket);
  return copy;
}

/** What every move allowed from `s` leads to: each successor's bytes and any violation, as a sorted list. */
function successors(ctx: ModelContext, s: ProtocolState): string[] {
  return enabledActions(s, ctx)
    .map((action) => {
      const applied = applyAction(s, ctx, action);
      return `${bytes(applied.next)} ${applied.violation ?? ''}`;
    })
    .sort();
}

describe('the canonical state encoding', () => {
  it('is a fixed point: the state it decodes to encodes to the same bytes', () => {
    fc.assert(
      fc.property(reached, ({ state }) => {
        const once = encodeState(state).bytes;
        expect(Buffer.from(encodeState(decodeState(once)).bytes).equals(Buffer.from(once))).toBe(true);
      }),
      { numRuns: 200 },
    );
  });

  it('does not depend on which worker is which', () => {
    fc.assert(
      fc.property(
        reached.chain(({ ctx, state }) =>
          fc
            .shuffledSubarray(
              state.workers.map((_, i) => i),
              { minLength: state.workers.length },
            )
            .map((order) => ({ ctx, state, order })),
        ),
        ({ state, order }) => {
          expect(bytes(permuted(state, order))).toBe(bytes(state));
        },
      ),
      { numRuns: 200 },
    );
  });

  it('does not depend on the values of minted ids, only on their order', () => {
    fc.assert(
      fc.property(reached, fc.integer({ min: 1, max: 5 }), fc.integer({ min: 0, max: 7 }), ({ state }, scale, shift) => {
        expect(
          bytes(
            renamed(
              state,
              (n) => n * scale + shift,
              (n) => n * (scale + 1) + shift,
            ),
          ),
        ).toBe(bytes(state));
      }),
      { numRuns: 200 },
    );
  });

  it('keeps what matters: the decoded state allows the same moves, to states that encode alike', () => {
    fc.assert(
      fc.property(reached, ({ ctx, state }) => {
        expect(successors(ctx, decodeState(encodeState(state).bytes))).toEqual(successors(ctx, state));
      }),
      { numRuns: 100 },
    );
  });

  it('tells apart states whose budgets differ', () => {
    fc.assert(
      fc.property(reached, ({ state }) => {
        const other = cloneState(state);
        other.budgets.kills += 1;
        expect(bytes(other)).not.toBe(bytes(state));
      }),
      { numRuns: 100 },
    );
  });
});

describe('the fingerprint set', () => {
  it('answers as a set of the fingerprints added would', () => {
    fc.assert(
      fc.property(fc.array(fc.uint8Array({ maxLength: 12 }), { maxLength: 300 }), (arrays) => {
        const set = new FingerprintSet(4);
        const seen = new Set<string>();
        for (const array of arrays) {
          const [high, low] = fingerprint(array);
          const key = `${high}:${low}`;
          expect(set.add(high, low)).toBe(!seen.has(key));
          seen.add(key);
          expect(set.has(high, low)).toBe(true);
        }
        expect(set.size).toBe(seen.size);
      }),
    );
  });

  it('never gives (0, 0), the empty slot, as a fingerprint', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 64 }), (array) => {
        const [high, low] = fingerprint(array);
        expect(high !== 0 || low !== 0).toBe(true);
      }),
    );
  });
});
