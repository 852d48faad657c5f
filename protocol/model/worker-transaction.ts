/**
 * The transactional steps of the worker program, each a statement (or a
 * Redis write between statements) of src/transactional/run.ts and
 * takeover.ts as src/bullmq/transactional-call.ts drives them. An attempt:
 * BEGIN with the lifetime's lock taken shared, confirm its fence (a fenced
 * heartbeat), insert the outcome row, COMMIT, then the complete. A
 * takeover of a lapsed attempt, after its reconcile-begin: end the sessions
 * holding the lock, wait for it exclusively, read what committed, record
 * the verdict (reconcile-settle), let the lock go.
 */
import type { ModelContext } from './hooks.js';
import {
  commitRow,
  committedAttempt,
  endLockHolders,
  insertRow,
  rowHeldOpen,
  holdsExclusive,
  takeoverHolds,
  dropOpenRow,
} from './outcome-rows.js';
import { CORRUPT, heartbeat, reconcileSettle } from './receipt-scripts.js';
import { ghostOf, resultOf, type ProtocolState } from './state.js';
import { execute, fencedWrite, ranTool } from './worker-attempt.js';
import { endWith, finish } from './worker-ending.js';

type Step = (s: ProtocolState, ctx: ModelContext, wi: number, choice: number) => string | undefined;

const lockedLifetimes = (ctx: ModelContext): boolean => ctx.hooks.takeover === 'lifetime-lock';

/** BEGIN, the lifetime's lock tried shared: a takeover holding it (or waiting for it) makes the attempt roll back at once. */
const txBegin: Step = (s, ctx, wi) => {
  const w = s.workers[wi]!;
  if (lockedLifetimes(ctx) && takeoverHolds(s, w.call, w.epoch)) {
    // taken_over: an unknown outcome, settled from the outcome row by the next claim.
    w.pc = 'outcomeUnknown';
    return undefined;
  }
  w.txn = 'shared';
  w.pc = lockedLifetimes(ctx) ? 'txConfirm' : 'txInsert';
  return undefined;
};

/** The fenced heartbeat inside the transaction, before the row: fenced out, the attempt rolls back and settles nothing. */
const txConfirm: Step = (s, ctx, wi) => {
  const w = s.workers[wi]!;
  const { seen, violation } = fencedWrite(s, wi, () => heartbeat(s, ctx, w.call, w.attempt, w.epoch));
  if (seen.code === 0 || seen.code === CORRUPT) {
    if (w.txn !== 'dead') w.txn = 'none';
    w.fencedOut = true;
    finish(s, wi, 'retry');
    return violation;
  }
  w.pc = 'txInsert';
  return violation;
};

/**
 * The insert: its row taken, a committed row (a lost race: the winner's
 * result is replayed), or another transaction's row, which it waits on.
 * While waiting: choice 0 goes on once that transaction ended, choice 1 is
 * `lock_timeout` (contended).
 */
const txInsert: Step = (s, ctx, wi, choice) => {
  const w = s.workers[wi]!;
  if (w.txn === 'dead') {
    // Its session was ended: the statement fails, nothing of it committed (NeverStartedError).
    w.txn = 'none';
    w.pc = 'fail';
    return undefined;
  }
  if (w.txn === 'blocked' && choice === 1) {
    w.txn = 'none';
    w.pc = lockedLifetimes(ctx) ? 'outcomeUnknown' : 'fail';
    return undefined;
  }
  const answer = insertRow(s, w.call, w.epoch, w.attempt);
  if (answer === 'blocked') {
    w.txn = 'blocked';
    return undefined;
  }
  if (answer === 'lost_race') {
    w.txn = 'none';
    w.carried = resultOf(committedAttempt(s, w.call, w.epoch));
    w.pc = 'complete';
    return undefined;
  }
  w.txn = 'inserted';
  w.pc = 'txCommit';
  return undefined;
};

/** Choice 0: COMMIT (it fails on an ended session); choice 1: the tool throws and the transaction rolls back. */
const txCommit: Step = (s, _ctx, wi, choice) => {
  const w = s.workers[wi]!;
  if (w.txn === 'dead' || choice === 1) {
    if (choice === 1) s.budgets.failures -= 1;
    if (w.txn === 'inserted') dropOpenRow(s, w.call, w.epoch);
    w.txn = 'none';
    w.pc = 'fail';
    return undefined;
  }
  commitRow(s, w.call, w.epoch);
  const ghost = ghostOf(s, w.call, w.epoch);
  ghost.commits += 1;
  ranTool(s, wi, false);
  w.txn = 'none';
  const late =
    ghost.judged >= w.attempt ? `call ${w.call}: attempt ${w.attempt} committed after a takeover had decided about it` : undefined;
  if (w.fencedOut) finish(s, wi, 'retry');
  else w.pc = 'complete';
  return late;
};

/** The takeover's sweep: every session holding the lifetime's lock, in either mode, is ended (pg_terminate_backend). */
const sweepLifetime: Step = (s, _ctx, wi) => {
  const w = s.workers[wi]!;
  endLockHolders(s, w.call, w.epoch);
  w.pc = 'lockLifetime';
  return undefined;
};

/** The takeover asks for the lifetime's lock exclusively; from here a new attempt's shared try fails. */
const lockLifetime: Step = (s, _ctx, wi) => {
  const w = s.workers[wi]!;
  w.txn = 'queued';
  w.ticket = s.nextTicket++;
  w.pc = 'readOutcome';
  return undefined;
};

/**
 * Choice 0, once no attempt holds the lock shared: the lock is granted and
 * the committed row read. Choice 1, while one still does: `lock_timeout`;
 * nothing was decided, and the job retries (as when the takeover's own
 * session was ended meanwhile).
 */
const readOutcome: Step = (s, ctx, wi, choice) => {
  const w = s.workers[wi]!;
  if (choice === 1 || w.txn === 'dead') {
    // Nothing was decided: the lock not had in time, or the session ended under the takeover; the job retries.
    w.txn = 'none';
    return endWith(s, ctx, wi, 'retry');
  }
  if (lockedLifetimes(ctx) && w.txn === 'queued') {
    w.txn = 'exclusive';
    w.ticket = 0;
  }
  const attempt = committedAttempt(s, w.call, w.epoch);
  w.verdict = attempt === 0 ? -1 : resultOf(attempt);
  w.pc = 'reconcileSettle';
  return undefined;
};

/** The verdict recorded (reconcile-settle-3.lua) while the lock is held; then the lock goes with the transaction. */
const reconcileSettleStep: Step = (s, ctx, wi) => {
  const w = s.workers[wi]!;
  const seen = reconcileSettle(s, ctx, w.call, w.attempt, w.epoch, w.reconciles, w.verdict, ctx.hooks.verdictSinceBegun);
  if (seen.code === 1) ghostOf(s, w.call, w.epoch).judged = w.attempt;
  // A session ended meanwhile (the worker was stopped past the idle timeout): its COMMIT fails, and the claim throws.
  const sessionLost = w.txn === 'dead';
  w.txn = 'none';
  if (seen.code === CORRUPT) return endWith(s, ctx, wi, 'corrupt');
  if (sessionLost) return endWith(s, ctx, wi, 'retry');
  if (seen.code === 0) {
    w.pc = 'claim';
    return undefined;
  }
  if (w.verdict > 0) {
    w.carried = w.verdict;
    return endWith(s, ctx, wi, 'done');
  }
  return execute(s, ctx, wi, seen.attempts, seen.epoch);
};

/** Whether worker `wi`'s takeover waits for attempts still holding the lifetime's lock, or its insert on another's row. */
export function transactionWaits(s: ProtocolState, ctx: ModelContext, wi: number): boolean {
  const w = s.workers[wi]!;
  if (w.pc === 'readOutcome') return lockedLifetimes(ctx) && w.txn === 'queued' && !holdsExclusive(s, w);
  return w.pc === 'txInsert' && w.txn === 'blocked' && rowHeldOpen(s, w.call, w.epoch);
}

/** The transactional steps, by the pc that takes them. */
export const TRANSACTION_STEPS = {
  txBegin,
  txConfirm,
  txInsert,
  txCommit,
  sweepLifetime,
  lockLifetime,
  readOutcome,
  reconcileSettle: reconcileSettleStep,
} as const;
