/**
 * The explicit-state checker: a breadth-first search over every move the
 * model allows from a scenario's initial state, to a depth, keeping each
 * canonical state once (fingerprint-set.ts), checking the invariants of
 * every state reached and of every move made. Breadth first, so the first
 * violation found is reached by a shortest path; each state keeps its
 * parent and the index of the move that reached it, and the path is
 * rebuilt by replaying those moves (trace.ts).
 */
import { applyAction, enabledActions } from '../model/actions.js';
import { decodeState, encodeInScratch, encodeState } from '../model/encoding.js';
import type { ModelContext } from '../model/hooks.js';
import { checkState } from '../model/invariants.js';
import { initialState } from '../model/state.js';
import { FingerprintSet, fingerprint } from './fingerprint-set.js';

/** States of one level of the search, packed into one buffer. */
class Level {
  private data = new Uint8Array(1 << 16);
  private ends: number[] = [];
  private indexes: number[] = [];
  private used = 0;

  push(bytes: Uint8Array, index: number): void {
    while (this.used + bytes.length > this.data.length) {
      const grown = new Uint8Array(this.data.length * 2);
      grown.set(this.data.subarray(0, this.used));
      this.data = grown;
    }
    this.data.set(bytes, this.used);
    this.used += bytes.length;
    this.ends.push(this.used);
    this.indexes.push(index);
  }

  get length(): number {
    return this.ends.length;
  }

  bytes(i: number): Uint8Array {
    return this.data.subarray(i === 0 ? 0 : this.ends[i - 1]!, this.ends[i]!);
  }

  index(i: number): number {
    return this.indexes[i]!;
  }
}

/** Growable parent links: for each state, the state it was reached from and the index of the move. */
class Parents {
  private parent = new Int32Array(1 << 20);
  private move = new Uint16Array(1 << 20);
  count = 0;

  add(parent: number, move: number): number {
    if (this.count === this.parent.length) {
      const parents = new Int32Array(this.parent.length * 2);
      parents.set(this.parent);
      this.parent = parents;
      const moves = new Uint16Array(this.move.length * 2);
      moves.set(this.move);
      this.move = moves;
    }
    this.parent[this.count] = parent;
    this.move[this.count] = move;
    return this.count++;
  }

  /** The move indexes from the initial state to `index`. */
  path(index: number): number[] {
    const moves: number[] = [];
    for (let at = index; at > 0; at = this.parent[at]!) moves.push(this.move[at]!);
    return moves.reverse();
  }
}

export interface ExploreOptions {
  /** The longest path explored, in moves. */
  readonly depth: number;
  /** Called after each level with the states and the depth so far. */
  readonly onLevel?: (progress: { depth: number; states: number; frontier: number; ms: number }) => void;
}

export interface Violation {
  readonly message: string;
  /** The indexes of the moves from the initial state (see trace.ts to print them). */
  readonly moves: readonly number[];
}

export interface ExploreResult {
  /** Distinct canonical states reached. */
  readonly states: number;
  /** Moves made (edges followed, repeats included). */
  readonly transitions: number;
  /** The depth the search reached: `depth`, or less when no new state was left. */
  readonly depth: number;
  /** No new state was left before the depth ran out: every reachable state was checked. */
  readonly exhausted: boolean;
  readonly ms: number;
  readonly violation?: Violation;
}

/** Explores `ctx.scenario` to `options.depth`; stops at the first violation. */
export function explore(ctx: ModelContext, options: ExploreOptions): ExploreResult {
  const started = performance.now();
  const seen = new FingerprintSet();
  const parents = new Parents();
  const initial = encodeState(initialState(ctx.scenario)).bytes;
  const [high, low] = fingerprint(initial);
  seen.add(high, low);
  parents.add(-1, 0);
  const first = checkState(decodeState(initial), ctx);
  const result = (depth: number, exhausted: boolean, transitions: number, violation?: Violation): ExploreResult => ({
    states: seen.size,
    transitions,
    depth,
    exhausted,
    ms: Math.round(performance.now() - started),
    ...(violation ? { violation } : {}),
  });
  if (first !== undefined) return result(0, false, 0, { message: first, moves: [] });
  let level = new Level();
  level.push(initial, 0);
  let transitions = 0;
  for (let depth = 0; depth < options.depth; depth++) {
    const next = new Level();
    for (let i = 0; i < level.length; i++) {
      const state = decodeState(level.bytes(i));
      const actions = enabledActions(state, ctx);
      for (let move = 0; move < actions.length; move++) {
        transitions++;
        const applied = applyAction(state, ctx, actions[move]!);
        const violation = applied.violation ?? checkState(applied.next, ctx);
        if (violation !== undefined) {
          return result(depth + 1, false, transitions, { message: violation, moves: [...parents.path(level.index(i)), move] });
        }
        const { buffer, length } = encodeInScratch(applied.next);
        const bytes = buffer.subarray(0, length);
        const [h, l] = fingerprint(bytes);
        if (!seen.add(h, l)) continue;
        next.push(bytes, parents.add(level.index(i), move));
      }
    }
    options.onLevel?.({ depth: depth + 1, states: seen.size, frontier: next.length, ms: Math.round(performance.now() - started) });
    if (next.length === 0) return result(depth + 1, true, transitions);
    level = next;
  }
  return result(options.depth, false, transitions);
}
