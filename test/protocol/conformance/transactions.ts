/**
 * The PostgreSQL moves of the conformance walk, made with the statements
 * src/transactional/run.ts and takeover.ts send, on one session per worker:
 * an attempt's BEGIN with the lifetime's lock tried shared, its confirm,
 * insert and COMMIT; a takeover's sweep, its exclusive lock and its read; a
 * session killed or ended by the server. A statement the model says waits
 * must still be waiting a moment later; one it says goes through must.
 */
import { heartbeat } from '../../../protocol/model/receipt-scripts.js';
import type { ModelContext } from '../../../protocol/model/hooks.js';
import type { ProtocolState } from '../../../protocol/model/state.js';
import { RealSide, RETENTION_MS, type Outcome, type Session } from './real-side.js';
import { committedAttempt, endLockHolders, insertRow, takeoverHolds } from '../../../protocol/model/outcome-rows.js';
import { cloneState } from '../../../protocol/model/state.js';
import { Divergence, expectSame } from './divergence.js';

/** How long a statement the model says waits is watched to be sure it does. */
const STILL_WAITING_MS = 80;
/** How long a statement the model says goes through may take (a terminated backend exits first). */
const GOES_THROUGH_MS = 5_000;

const settledWithin = <T>(promise: Promise<T>, ms: number): Promise<T | 'waiting'> =>
  Promise.race([promise, new Promise<'waiting'>((resolve) => setTimeout(() => resolve('waiting'), ms))]);

async function goesThrough(what: string, pending: Promise<Outcome>): Promise<Outcome> {
  const outcome = await settledWithin(pending, GOES_THROUGH_MS);
  if (outcome === 'waiting')
    throw new Divergence(`${what}: the model says it goes through, but it still waits after ${GOES_THROUGH_MS} ms`);
  return outcome;
}

function sessionOf(side: RealSide, wi: number): Session {
  const session = side.sessions[wi];
  if (session === undefined) throw new Divergence(`worker ${wi} has a transaction in the model but no session`);
  return session;
}

/** Waits until the backend `pid` is gone (a terminated or closed session's transaction is then rolled back). */
async function gone(side: RealSide, pid: number): Promise<void> {
  for (let tries = 0; tries < 200; tries++) {
    const rows = (await side.observer!.query('SELECT 1 FROM pg_stat_activity WHERE pid = $1', [pid])).rows;
    if (rows.length === 0) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error(`backend ${pid} did not exit`);
}

const committedRead = (side: RealSide, call: number, epoch: number) =>
  side.observer!.query(`SELECT attempt FROM ${side.table} WHERE receipt_key = $1 AND epoch = $2`, [
    side.receiptKey(call),
    side.real(call, epoch),
  ]);

/** Ends worker `wi`'s transaction with `how` (a session already ended just fails it) and closes its session. */
async function endTransaction(side: RealSide, wi: number, how: 'COMMIT' | 'ROLLBACK'): Promise<void> {
  const session = side.sessions[wi];
  if (session === undefined) return;
  await RealSide.statement(session, how);
  await side.close(wi);
  await gone(side, session.pid);
}

const rollBack = (side: RealSide, wi: number): Promise<void> => endTransaction(side, wi, 'ROLLBACK');

export const realTransaction = {
  /** Ends worker `wi`'s transaction as its step ends it (COMMIT of a takeover, or nothing left). */
  async release(side: RealSide, wi: number): Promise<void> {
    await endTransaction(side, wi, 'COMMIT');
  },

  /** The process is killed: its connection closes, and the server rolls its transaction back. */
  async kill(side: RealSide, wi: number): Promise<void> {
    const session = side.sessions[wi];
    if (session === undefined) return;
    await side.close(wi);
    await gone(side, session.pid);
  },

  /** The server ends the session (idle in transaction): its next statement fails. */
  async endSession(side: RealSide, wi: number): Promise<void> {
    const session = sessionOf(side, wi);
    await side.observer!.query('SELECT pg_terminate_backend($1)', [session.pid]);
    await gone(side, session.pid);
  },

  async step(side: RealSide, ctx: ModelContext, pre: ProtocolState, model: ProtocolState, wi: number, choice: number): Promise<void> {
    const w = pre.workers[wi]!;
    const call = w.call;
    const [space, key] = side.lockKey(call, w.epoch);
    switch (w.pc) {
      case 'txBegin': {
        const session = await side.open(wi);
        await RealSide.statement(session, 'BEGIN');
        const tried = await RealSide.statement(session, 'SELECT pg_try_advisory_xact_lock_shared($1::int, $2::int) AS locked', [
          space,
          key,
        ]);
        const locked = tried.ok && tried.rows[0]!['locked'] === true;
        expectSame('the lifetime lock tried shared', locked, !takeoverHolds(pre, call, w.epoch));
        if (!locked) await rollBack(side, wi);
        return;
      }
      case 'txConfirm': {
        const seen = heartbeat(model, ctx, call, w.attempt, w.epoch);
        const args = [w.attempt, side.deadlineMs(ctx.scenario.ticks.lease), RETENTION_MS, side.real(call, w.epoch)];
        const reply = await side.script('heartbeat', side.transitionKeys(call), args);
        const code = 'error' in reply ? -1 : reply[0];
        expectSame('the confirm (heartbeat)', code, seen.code);
        if (code !== 1 && code !== 2) await rollBack(side, wi);
        return;
      }
      case 'txInsert':
        return await insert(side, pre, wi, choice);
      case 'txCommit': {
        const session = sessionOf(side, wi);
        if (choice === 1) return await rollBack(side, wi);
        const written = await RealSide.statement(
          session,
          `UPDATE ${side.table} SET result = $3::json, finished_at = clock_timestamp() WHERE receipt_key = $1 AND epoch = $2 AND attempt = $4 RETURNING 1`,
          [side.receiptKey(call), side.real(call, w.epoch), RealSide.resultText(w.attempt), w.attempt],
        );
        const committed = written.ok && (await RealSide.statement(session, 'COMMIT')).ok;
        expectSame('the COMMIT', committed, w.txn !== 'dead');
        return await rollBack(side, wi);
      }
      case 'sweepLifetime': {
        const session = await side.open(wi);
        await RealSide.statement(session, 'BEGIN');
        // The sweep of holdLifetime (src/transactional/takeover.ts): every session holding this lock is ended.
        const swept = await RealSide.statement(
          session,
          `SELECT a.pid, pg_terminate_backend(a.pid) AS ended FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
            WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 2 AND l.pid <> pg_backend_pid()
              AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
              AND l.classid = $1::bigint::oid AND l.objid = ($2::bigint & 4294967295)::oid`,
          [space, key],
        );
        if (!swept.ok) throw new Divergence(`the sweep failed: ${swept.message}`);
        // The model's sweep, on a copy: the sessions it ends are those that were not ended before.
        const after = cloneState(pre);
        endLockHolders(after, call, w.epoch);
        const ended = after.workers.filter((v, i) => v.txn === 'dead' && pre.workers[i]!.txn !== 'dead').length;
        expectSame('the sessions the sweep ended', swept.rows.length, ended);
        for (const row of swept.rows) await gone(side, Number(row['pid']));
        return;
      }
      case 'lockLifetime': {
        const session = sessionOf(side, wi);
        session.pending = RealSide.statement(session, 'SELECT pg_advisory_xact_lock($1::int, $2::int)', [space, key]);
        return;
      }
      case 'readOutcome':
        return await readOutcome(side, ctx, pre, wi, choice);
    }
  },
};

async function insert(side: RealSide, pre: ProtocolState, wi: number, choice: number): Promise<void> {
  const w = pre.workers[wi]!;
  const call = w.call;
  const session = sessionOf(side, wi);
  let pending = session.pending;
  session.pending = undefined;
  if (w.txn === 'blocked' && choice === 1) {
    // lock_timeout fires: the statement is cancelled, the transaction rolls back (contended).
    await side.observer!.query('SELECT pg_cancel_backend($1)', [session.pid]);
    expectSame('the cancelled insert', (await goesThrough('the cancelled insert', pending!)).ok, false);
    return await rollBack(side, wi);
  }
  pending ??= RealSide.statement(
    session,
    `INSERT INTO ${side.table} (receipt_key, epoch, attempt, started_at) VALUES ($1, $2, $3, now())`,
    [side.receiptKey(call), side.real(call, w.epoch), w.attempt],
  );
  const expected = w.txn === 'dead' ? 'failed' : insertRow(cloneState(pre), call, w.epoch, w.attempt);
  if (expected === 'blocked') {
    const early = await settledWithin(pending, STILL_WAITING_MS);
    if (early !== 'waiting')
      throw new Divergence(`the insert: the model says it waits on another attempt's row, but it answered ${JSON.stringify(early)}`);
    session.pending = pending;
    return;
  }
  const outcome = await goesThrough('the insert', pending);
  const got = outcome.ok ? 'inserted' : outcome.code === '23505' ? 'lost_race' : 'failed';
  expectSame('the insert', got, expected);
  if (got === 'inserted') return;
  await rollBack(side, wi);
  if (got === 'lost_race') {
    const rows = (await committedRead(side, call, w.epoch)).rows;
    expectSame('the committed row a lost race replays', Number(rows[0]?.['attempt'] ?? 0), committedAttempt(pre, call, w.epoch));
  }
}

async function readOutcome(side: RealSide, ctx: ModelContext, pre: ProtocolState, wi: number, choice: number): Promise<void> {
  const w = pre.workers[wi]!;
  const expected = committedAttempt(pre, w.call, w.epoch);
  if (ctx.hooks.takeover !== 'lifetime-lock') {
    const rows = (await committedRead(side, w.call, w.epoch)).rows;
    return expectSame('the committed row', Number(rows[0]?.['attempt'] ?? 0), expected);
  }
  const session = sessionOf(side, wi);
  const pending = session.pending!;
  session.pending = undefined;
  if (w.txn === 'dead') {
    // Its session was ended (after the lock was granted, or while it waited): whatever the lock statement said, nothing more runs on it.
    await settledWithin(pending, GOES_THROUGH_MS);
    expectSame('a read on the ended session', (await RealSide.statement(session, 'SELECT 1')).ok, false);
    return await rollBack(side, wi);
  }
  if (choice === 1) {
    // lock_timeout: the request still waits, and is cancelled.
    await side.observer!.query('SELECT pg_cancel_backend($1)', [session.pid]);
    expectSame('the lock given up', (await goesThrough('the lock given up', pending)).ok, false);
    return await rollBack(side, wi);
  }
  const locked = await goesThrough('the exclusive lifetime lock', pending);
  if (!locked.ok) throw new Divergence(`the exclusive lifetime lock failed: ${locked.message}`);
  const read = await RealSide.statement(session, `SELECT attempt FROM ${side.table} WHERE receipt_key = $1 AND epoch = $2`, [
    side.receiptKey(w.call),
    side.real(w.call, w.epoch),
  ]);
  expectSame('the committed row, read under the exclusive lock', read.ok ? Number(read.rows[0]?.['attempt'] ?? 0) : 'failed', expected);
}
