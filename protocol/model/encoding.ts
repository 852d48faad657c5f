/**
 * The canonical encoding of a state: bytes that two states share exactly
 * when they behave alike from here on, so the checker keeps one of them.
 * Three things are forgotten on the way: which worker is which (workers
 * run one program, so they are sorted by their own bytes), the values of
 * minted ids (epochs, tokens and reservation ids are renumbered in the
 * order they were minted, which is all a script compares), and whatever
 * no move can read again (the rows and ghost facts of a lifetime nothing
 * names any more, a binding of a reservation nothing holds).
 * `decodeState(encodeState(s).bytes)` (decoding.ts) is that canonical state.
 */
import { DECIDER_CODE, EFFECT_CODE, ENDING_CODE, JOB_CODE, NOTHING, PC_CODE, STATUS_CODE, TXN_CODE } from './codes.js';
import { decodeState } from './decoding.js';
import type { ProtocolState, Worker } from './state.js';

/** An order-keeping renaming of a few ids to 1, 2, 3...; 0 stays 0. */
class Renaming {
  private ids: number[] = [];
  add(id: number): void {
    if (id > 0 && !this.ids.includes(id)) this.ids.push(id);
  }
  seal(): this {
    this.ids.sort((a, b) => a - b);
    return this;
  }
  has(id: number): boolean {
    return this.ids.includes(id);
  }
  of(id: number): number {
    return id <= 0 ? 0 : this.ids.indexOf(id) + 1;
  }
}

/**
 * One growing buffer every encoding writes into (the checker encodes
 * millions of states, and a buffer made per state was most of its time).
 */
class Bytes {
  buffer = new Uint8Array(1024);
  length = 0;
  push(value: number): void {
    if (value < 0 || value > 255 || !Number.isInteger(value)) throw new RangeError(`a state field of ${value} does not fit a byte`);
    if (this.length === this.buffer.length) {
      const grown = new Uint8Array(this.buffer.length * 2);
      grown.set(this.buffer);
      this.buffer = grown;
    }
    this.buffer[this.length++] = value;
  }
}

const scratch = new Bytes();

/** The canonical bytes of `s`, and `order[j]`: the index in `s.workers` of the worker encoded j-th. */
export interface Encoded {
  readonly bytes: Uint8Array;
  readonly order: readonly number[];
}

function namings(s: ProtocolState): { epochs: Renaming[]; reservations: Renaming; tickets: Renaming } {
  const epochs = s.receipts.map((r, call) => {
    const ids = new Renaming();
    ids.add(r.epoch);
    ids.add(r.token);
    ids.add(r.approvalEpoch);
    ids.add(s.forms[call]!);
    for (const w of s.workers) {
      if (w.call !== call) continue;
      ids.add(w.epoch);
      ids.add(w.seenEpoch);
      ids.add(w.token);
    }
    return ids.seal();
  });
  const reservations = new Renaming();
  for (const res of s.limit.reservations) reservations.add(res.id);
  for (const id of s.limit.pendingFor) reservations.add(id);
  for (const r of s.receipts) reservations.add(r.limitHolder);
  for (const w of s.workers) {
    reservations.add(w.reservation);
    reservations.add(w.settling);
    for (const id of w.expired) reservations.add(id);
  }
  const tickets = new Renaming();
  for (const w of s.workers) tickets.add(w.ticket);
  return { epochs, reservations: reservations.seal(), tickets: tickets.seal() };
}

const NO_IDS = new Renaming();

function workerBytes(w: Worker, epochs: Renaming[], reservations: Renaming, tickets: Renaming): number[] {
  const ids = w.call >= 0 ? epochs[w.call]! : NO_IDS;
  const bytes = [
    PC_CODE[w.pc],
    w.call + 1,
    +w.stopped,
    +w.lockLost,
    w.attempt,
    ids.of(w.epoch),
    STATUS_CODE[w.seenStatus],
    w.seenAttempts,
    ids.of(w.seenEpoch),
    ids.of(w.token),
    w.reconciles,
    w.verdict + 1,
    reservations.of(w.reservation),
    +w.refused,
    +w.refusedByOwn,
    reservations.of(w.settling),
    +w.reserveAgain,
    w.rounds,
    +w.shareBound,
    TXN_CODE[w.txn],
    +w.stepKnown,
    +w.fencedOut,
    w.carried,
    ENDING_CODE[w.ending],
    +w.afterUnknown,
    tickets.of(w.ticket),
    w.expired.length,
  ];
  for (let i = 0; i < w.expired.length; i++) bytes.push(reservations.of(w.expired[i]!), w.expiredCalls[i]!);
  return bytes;
}

function compareBytes(a: readonly number[], b: readonly number[]): number {
  for (let i = 0; i < Math.min(a.length, b.length); i++) if (a[i] !== b[i]) return a[i]! - b[i]!;
  return a.length - b.length;
}

/**
 * Writes the canonical bytes of `s` into the shared scratch buffer and
 * answers how many, with the worker order: valid until the next encoding.
 * The checker fingerprints them there and copies only a new state's.
 */
export function encodeInScratch(s: ProtocolState): {
  readonly buffer: Uint8Array;
  readonly length: number;
  readonly order: readonly number[];
} {
  const { epochs, reservations, tickets } = namings(s);
  const out = scratch;
  out.length = 0;
  const b = s.budgets;
  out.push(b.kills);
  out.push(b.stops);
  out.push(b.expiries);
  out.push(b.lostReplies);
  out.push(b.resolves);
  out.push(b.decisions);
  out.push(b.failures);
  out.push(s.receipts.length);
  for (let call = 0; call < s.receipts.length; call++) {
    const r = s.receipts[call]!;
    const ids = epochs[call]!;
    out.push(STATUS_CODE[r.status]);
    out.push(r.attempts);
    out.push(ids.of(r.epoch));
    out.push(EFFECT_CODE[r.effect]);
    out.push(r.lease);
    out.push(+r.ambiguous);
    out.push(r.result);
    out.push(+r.neverStarted);
    out.push(ids.of(r.token));
    out.push(r.reconciles);
    out.push(r.reconcileLease);
    out.push(+r.step);
    out.push(ids.of(r.approvalEpoch));
    out.push(r.approvalLeft);
    out.push(DECIDER_CODE[r.decidedBy]);
    out.push(reservations.of(r.limitHolder));
    out.push(r.limitAttempt);
    out.push(+r.renewed);
    out.push(JOB_CODE[s.jobs[call]!]);
    out.push(ids.of(s.forms[call]!));
    out.push(s.approves[call]!);
    out.push(s.runs[call]!);
    const rows = s.rows[call]!.filter((row) => ids.has(row.epoch)).sort((x, y) => x.epoch - y.epoch);
    out.push(rows.length);
    for (const row of rows) {
      out.push(ids.of(row.epoch));
      out.push(+(row.state === 'committed'));
      out.push(row.attempt);
    }
    const ghosts = s.ghosts.filter((g) => g.call === call && ids.has(g.epoch)).sort((x, y) => x.epoch - y.epoch);
    out.push(ghosts.length);
    for (const g of ghosts) {
      out.push(ids.of(g.epoch));
      out.push(g.effects);
      out.push(g.commits);
      out.push(+g.toldNotRun);
      out.push(g.completedWith);
      out.push(g.flaggedAttempt);
      out.push(+g.executed);
      out.push(g.decision + 1);
      out.push(g.judged);
    }
  }
  out.push(s.limit.used);
  out.push(s.limit.pending);
  const held = [...s.limit.reservations].sort((x, y) => x.id - y.id);
  out.push(held.length);
  for (const res of held) {
    for (const n of [reservations.of(res.id), res.call, +(res.state === 'committed'), res.deadline]) out.push(n);
  }
  for (const id of s.limit.pendingFor) out.push(reservations.of(id));
  const bindings = [...s.limit.bindings].filter(([id]) => reservations.has(id)).sort((x, y) => x[0] - y[0]);
  out.push(bindings.length);
  for (const [id, value] of bindings) {
    out.push(reservations.of(id));
    out.push(value < 0 ? NOTHING : value);
  }
  const workers = s.workers.map((w, i) => ({ i, bytes: workerBytes(w, epochs, reservations, tickets) }));
  workers.sort((x, y) => compareBytes(x.bytes, y.bytes));
  out.push(workers.length);
  for (const w of workers) for (const n of w.bytes) out.push(n);
  return { buffer: out.buffer, length: out.length, order: workers.map((w) => w.i) };
}

/** The canonical bytes of `s` (see the file's header), a copy of their own. */
export function encodeState(s: ProtocolState): Encoded {
  const { buffer, length, order } = encodeInScratch(s);
  return { bytes: buffer.slice(0, length), order };
}

export { decodeState };
