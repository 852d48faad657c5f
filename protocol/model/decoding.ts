/**
 * Reading a state's canonical bytes (encoding.ts) back into the state they
 * stand for: the canonical one, ids renumbered, workers in their order.
 * Read field by field from a cursor, in the order encoding.ts writes them.
 */
import { DECIDERS, EFFECTS, ENDINGS, JOBS, NOTHING, PCS, STATUSES, TXNS } from './codes.js';
import type { OutcomeRow, ProtocolState, Receipt, Worker } from './state.js';

class Reader {
  private at = 0;
  constructor(private readonly bytes: Uint8Array) {}
  byte(): number {
    return this.bytes[this.at++]!;
  }
  flag(): boolean {
    return this.bytes[this.at++] === 1;
  }
}

function readReceipt(r: Reader): Receipt {
  return {
    status: STATUSES[r.byte()]!,
    attempts: r.byte(),
    epoch: r.byte(),
    effect: EFFECTS[r.byte()]!,
    lease: r.byte(),
    ambiguous: r.flag(),
    result: r.byte(),
    neverStarted: r.flag(),
    token: r.byte(),
    reconciles: r.byte(),
    reconcileLease: r.byte(),
    step: r.flag(),
    approvalEpoch: r.byte(),
    approvalLeft: r.byte(),
    decidedBy: DECIDERS[r.byte()]!,
    limitHolder: r.byte(),
    limitAttempt: r.byte(),
    renewed: r.flag(),
  };
}

function readWorker(r: Reader): Worker {
  const w: Worker = {
    pc: PCS[r.byte()]!,
    call: r.byte() - 1,
    stopped: r.flag(),
    lockLost: r.flag(),
    attempt: r.byte(),
    epoch: r.byte(),
    seenStatus: STATUSES[r.byte()]!,
    seenAttempts: r.byte(),
    seenEpoch: r.byte(),
    token: r.byte(),
    reconciles: r.byte(),
    verdict: r.byte() - 1,
    reservation: r.byte(),
    refused: r.flag(),
    refusedByOwn: r.flag(),
    settling: r.byte(),
    reserveAgain: r.flag(),
    rounds: r.byte(),
    shareBound: r.flag(),
    txn: TXNS[r.byte()]!,
    stepKnown: r.flag(),
    fencedOut: r.flag(),
    carried: r.byte(),
    ending: ENDINGS[r.byte()]!,
    afterUnknown: r.flag(),
    ticket: r.byte(),
    expired: [],
    expiredCalls: [],
  };
  for (let n = r.byte(); n > 0; n--) {
    w.expired.push(r.byte());
    w.expiredCalls.push(r.byte());
  }
  return w;
}

/** Reads bytes {@link encodeState} wrote back into a state (the canonical one). */
export function decodeState(bytes: Uint8Array): ProtocolState {
  const r = new Reader(bytes);
  const s: ProtocolState = {
    receipts: [],
    rows: [],
    limit: { used: 0, pending: 0, reservations: [], pendingFor: [], bindings: new Map() },
    jobs: [],
    workers: [],
    forms: [],
    budgets: {
      kills: r.byte(),
      stops: r.byte(),
      expiries: r.byte(),
      lostReplies: r.byte(),
      resolves: r.byte(),
      decisions: r.byte(),
      failures: r.byte(),
    },
    nextId: [],
    nextReservation: 1,
    nextTicket: 1,
    ghosts: [],
    approves: [],
    runs: [],
  };
  let maxReservation = 0;
  const calls = r.byte();
  for (let call = 0; call < calls; call++) {
    const receipt = readReceipt(r);
    s.receipts.push(receipt);
    maxReservation = Math.max(maxReservation, receipt.limitHolder);
    s.jobs.push(JOBS[r.byte()]!);
    const form = r.byte();
    s.forms.push(form);
    s.approves.push(r.byte());
    s.runs.push(r.byte());
    let maxId = Math.max(receipt.epoch, receipt.token, receipt.approvalEpoch, form);
    const rows: OutcomeRow[] = [];
    for (let n = r.byte(); n > 0; n--) {
      const epoch = r.byte();
      maxId = Math.max(maxId, epoch);
      rows.push({ epoch, state: r.flag() ? 'committed' : 'open', attempt: r.byte() });
    }
    s.rows.push(rows);
    for (let n = r.byte(); n > 0; n--) {
      const epoch = r.byte();
      maxId = Math.max(maxId, epoch);
      s.ghosts.push({
        call,
        epoch,
        effects: r.byte(),
        commits: r.byte(),
        toldNotRun: r.flag(),
        completedWith: r.byte(),
        flaggedAttempt: r.byte(),
        executed: r.flag(),
        decision: r.byte() - 1,
        judged: r.byte(),
      });
    }
    s.nextId.push(maxId + 1);
  }
  s.limit.used = r.byte();
  s.limit.pending = r.byte();
  for (let n = r.byte(); n > 0; n--) {
    const id = r.byte();
    maxReservation = Math.max(maxReservation, id);
    s.limit.reservations.push({ id, call: r.byte(), state: r.flag() ? 'committed' : 'pending', deadline: r.byte() });
  }
  s.limit.pendingFor = s.receipts.map(() => r.byte());
  for (let n = r.byte(); n > 0; n--) {
    const id = r.byte();
    const value = r.byte();
    s.limit.bindings.set(id, value === NOTHING ? -1 : value);
  }
  for (let n = r.byte(); n > 0; n--) {
    const w = readWorker(r);
    maxReservation = Math.max(maxReservation, w.reservation, w.settling, ...w.expired);
    if (w.call >= 0) s.nextId[w.call] = Math.max(s.nextId[w.call]!, w.epoch + 1, w.seenEpoch + 1, w.token + 1);
    s.workers.push(w);
    s.nextTicket = Math.max(s.nextTicket, w.ticket + 1);
  }
  s.nextReservation = maxReservation + 1;
  return s;
}
