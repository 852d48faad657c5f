/**
 * Each worker's step of the model, made for real: the script (or
 * PostgreSQL statement, transactions.ts) the step stands for, sent with the
 * arguments the wrapper would send, its answer compared with the answer the
 * model's transition gives from the same state. A step with no real part (a
 * tool's effect) sends nothing. Throws {@link Divergence} when the two
 * disagree. The other moves are in moves.ts.
 */
import { randomBytes } from 'node:crypto';
import { parseClaimObservation, parseObservation, type Observation } from '../../../src/redis/receipts/channel.js';
import { approvalGate } from '../../../protocol/model/approval-scripts.js';
import type { ModelContext } from '../../../protocol/model/hooks.js';
import { limitBind, limitCommit, limitRelease, limitReserve, limitSettle, limitUnbind } from '../../../protocol/model/limit-scripts.js';
import * as receipts from '../../../protocol/model/receipt-scripts.js';
import { cloneState, type ProtocolState } from '../../../protocol/model/state.js';
import { LIMIT_NAME, RealSide, RETENTION_MS } from './real-side.js';
import { Divergence, expectSame } from './divergence.js';
import { realTransaction } from './transactions.js';

const LEASE = (side: RealSide, ctx: ModelContext) => side.deadlineMs(ctx.scenario.ticks.lease);

/** An observation reply compared with the model's, in the model's terms. */
export function compareObservation(
  side: RealSide,
  what: string,
  call: number,
  reply: unknown[] | { error: string },
  model: receipts.Observed,
  claim = false,
) {
  if ('error' in reply) return expectSame(what, 'corrupt', model.code === receipts.CORRUPT ? 'corrupt' : model);
  const seen: Observation = claim ? parseClaimObservation('claim', reply) : parseObservation(what, reply);
  expectSame(
    what,
    {
      code: seen.code,
      status: seen.status ?? 'absent',
      attempts: seen.attempts,
      expired: seen.leaseExpired,
      ambiguous: seen.ambiguousMs !== null,
      epoch: side.modelId(call, seen.epoch) ?? `unknown epoch ${seen.epoch}`,
      result: seen.status === 'completed' ? RealSide.resultOf(seen.resultText === '' ? null : seen.resultText) : 0,
    },
    {
      code: model.code,
      status: model.status,
      attempts: model.attempts,
      expired: model.expired,
      ambiguous: model.ambiguous,
      epoch: model.epoch,
      result: model.status === 'completed' ? (model.result === 0 ? -1 : model.result) : 0,
    },
  );
}

/**
 * Makes worker `wi`'s step for real; `pre` is the model's state before it
 * (the model's transitions are run again on copies of it for their answers).
 */
export async function realStep(side: RealSide, ctx: ModelContext, pre: ProtocolState, wi: number, choice: number): Promise<void> {
  const w = pre.workers[wi]!;
  const call = w.call;
  const spec = ctx.scenario.calls[call]!;
  const model = cloneState(pre);
  const owner = `w${wi}`;
  const transition = side.transitionKeys(call);
  const epoch = side.real(call, w.epoch);
  switch (w.pc) {
    case 'gate': {
      const token = pre.nextId[call]!;
      const answer = approvalGate(model, ctx, call, spec.effect, token);
      const args = [
        '1',
        side.real(call, token),
        side.tenant,
        side.run,
        side.tool,
        `args${call}`,
        spec.effect,
        '',
        side.deadlineMs(ctx.scenario.ticks.approval),
      ];
      const reply = await side.script('approval-gate', side.approvalKeys(call), [...args, '', RETENTION_MS, '', '2']);
      if ('error' in reply) return expectSame('approval-gate', reply.error, answer);
      return expectSame('approval-gate', { answer: reply[0], created: reply[8] === 1 }, { answer: answer.answer, created: answer.created });
    }
    case 'reserve': {
      const answer = limitReserve(model, ctx, call, ctx.hooks.reusesOwnReservation);
      // A new id each time, as the store mints one; the script answers the receipt's own pending one instead, when it has one.
      const fresh = randomBytes(9).toString('base64url');
      const args = [fresh, 1, ctx.scenario.limitMax, side.windowMs, side.deadlineMs(ctx.scenario.ticks.reservation), side.receiptKey(call)];
      const reply = await side.script('limit-reserve', side.limitKeys(), [...args, side.bindingsKey(), LIMIT_NAME, 16]);
      if ('error' in reply) throw new Divergence(`limit-reserve: ${reply.error}`);
      const granted = reply[0] === 1;
      if (granted && !answer.reused) side.realReservation(answer.id, String(reply[7]));
      const expired: number[] = [];
      const expiredCalls: number[] = [];
      for (let i = 0; i < Number(reply[13]); i++) {
        expired.push(side.modelReservation(String(reply[14 + 3 * i])) ?? -1);
        expiredCalls.push(side.callOf(String(reply[16 + 3 * i])));
      }
      // The expired ones as id:call pairs, in no order (the model cannot know the order of their deadlines' milliseconds).
      const pairs = (ids: readonly number[], calls: readonly number[]) => ids.map((id, i) => `${id}:${calls[i]}`).sort();
      const realId = granted ? (side.modelReservation(String(reply[7])) ?? -1) : 0;
      return expectSame(
        'limit-reserve',
        { granted, reused: reply[8] === 1, id: realId, expired: pairs(expired, expiredCalls) },
        { granted: answer.granted, reused: answer.reused, id: answer.id, expired: pairs(answer.expired, answer.expiredCalls) },
      );
    }
    case 'settleExpired':
    case 'settleShare': {
      const [id, holder] = w.pc === 'settleShare' ? [w.reservation, call] : [w.expired[0]!, w.expiredCalls[0]!];
      const keys = [side.bindingsKey(), side.receiptKey(holder)];
      const reply = await side.script('limit-settle', keys, [side.realReservation(id), RETENTION_MS, side.bindingField]);
      return expectSame('limit-settle', 'error' in reply ? reply : reply[0], limitSettle(model, id, holder));
    }
    case 'commitExpired':
    case 'commitShare':
    case 'commitHeld': {
      const id = w.pc === 'commitExpired' ? w.settling : w.reservation;
      return await onReservation(side, 'limit-commit', id, limitCommit(model, id));
    }
    case 'releaseExpired':
    case 'releaseShare':
    case 'releaseUnused':
    case 'giveBackShare': {
      const id = w.pc === 'releaseExpired' ? w.settling : w.reservation;
      return await onReservation(side, 'limit-release', id, limitRelease(model, id));
    }
    case 'bind': {
      if (w.refused) return await boundOn(side, pre, call);
      const reply = await side.script(
        'limit-bind',
        [side.receiptKey(call), side.bindingsKey()],
        [side.realReservation(w.reservation), side.bindingField, RETENTION_MS],
      );
      const code = limitBind(model, call, w.reservation);
      return expectSame('limit-bind', 'error' in reply ? receipts.CORRUPT : reply[0], code);
    }
    case 'unbindShare': {
      const reply = await side.script(
        'limit-unbind',
        [side.receiptKey(call), side.bindingsKey()],
        [side.realReservation(w.reservation), side.bindingField, RETENTION_MS, w.attempt, side.real(call, w.epoch)],
      );
      const code = limitUnbind(model, call, w.reservation, w.attempt, w.epoch);
      return expectSame('limit-unbind', 'error' in reply ? receipts.CORRUPT : reply[0], code);
    }
    case 'boundOn':
      return await boundOn(side, pre, call);
    case 'claim': {
      const token = pre.nextId[call]!;
      const needsApproval = spec.approval && ctx.hooks.claimAsksApproval;
      const seen = receipts.claim(model, ctx, call, spec.effect, token, needsApproval);
      const [receipt, index, breaker, count] = side.callKeys(call);
      const args = [LEASE(side, ctx), RETENTION_MS, owner, spec.effect, side.tenant, side.run, side.tool, `args${call}`, side.removedField];
      const reply = await side.script(
        'claim',
        [receipt, index, breaker, count],
        [...args, side.rejectionsField, side.real(call, token), '', 2, needsApproval ? '1' : '0'],
      );
      return compareObservation(side, 'claim', call, reply, seen, true);
    }
    case 'reclaim': {
      const token = pre.nextId[call]!;
      const seenBefore = { status: w.seenStatus, attempts: w.seenAttempts, epoch: w.seenEpoch };
      const seen = receipts.reclaim(model, ctx, call, seenBefore, spec.effect, token);
      const args = [
        w.seenStatus,
        w.seenAttempts,
        LEASE(side, ctx),
        RETENTION_MS,
        owner,
        side.real(call, w.seenEpoch),
        spec.effect,
        '',
        side.real(call, token),
      ];
      return compareObservation(side, 'reclaim', call, await side.script('reclaim', transition, args), seen);
    }
    case 'releaseLost': {
      const seen = receipts.releaseLostClaim(model, call, w.attempt, w.epoch, w.token);
      const args = [w.attempt, epoch, owner, side.real(call, w.token), 'the reply was lost', RETENTION_MS];
      return compareObservation(side, 'release-lost-claim', call, await side.script('release-lost-claim', transition, args), seen);
    }
    case 'flag': {
      const seen = receipts.flagAmbiguous(model, call, w.seenAttempts, w.seenEpoch, spec.effect);
      const args = [w.seenAttempts, RETENTION_MS, side.real(call, w.seenEpoch), spec.effect];
      return compareObservation(side, 'flag-ambiguous', call, await side.script('flag-ambiguous', transition, args), seen);
    }
    case 'reconcileBegin': {
      const begun = receipts.reconcileBegin(model, ctx, call, w.attempt, w.epoch);
      const args = [w.attempt, side.deadlineMs(ctx.scenario.ticks.reconcile), owner, RETENTION_MS, '', epoch];
      const reply = await side.script('reconcile-begin', transition, args);
      // The time it began, which its verdict carries (reconcile-settle-3.lua's ARGV[11]).
      if (!('error' in reply) && reply[0] === 1) side.begunMs[wi] = Number(reply[3]);
      const real = 'error' in reply ? { code: receipts.CORRUPT, n: 0 } : { code: reply[0], n: reply[0] === 1 ? reply[1] : 0 };
      return expectSame('reconcile-begin', real, { code: begun.code, n: begun.reconciles });
    }
    case 'reconcileSettle': {
      const sinceBegun = ctx.hooks.verdictSinceBegun;
      const seen = receipts.reconcileSettle(model, ctx, call, w.attempt, w.epoch, w.reconciles, w.verdict, sinceBegun);
      const verdict =
        w.verdict > 0 ? ['completed', owner, RealSide.resultText(w.verdict), 0] : ['not_started', owner, '', LEASE(side, ctx)];
      const begun = sinceBegun ? (side.begunMs[wi] ?? '') : '';
      const args = [w.attempt, w.reconciles, ...verdict, RETENTION_MS, '', epoch, 'settled from PostgreSQL', begun];
      const reply = await side.script('reconcile-settle', transition, args);
      await realTransaction.release(side, wi);
      const real = 'error' in reply ? receipts.CORRUPT : reply[0];
      return expectSame('reconcile-settle', real, seen.code === receipts.CORRUPT ? receipts.CORRUPT : seen.code);
    }
    case 'readSteps': {
      const step = await side.redis.hget(side.receiptKey(call), 'step:s');
      return expectSame('the recorded steps', step !== null, pre.receipts[call]!.step);
    }
    case 'recordStep': {
      const seen = receipts.recordStep(model, call, w.attempt, w.epoch);
      return compareObservation(
        side,
        'record-step',
        call,
        await side.script('record-step', transition, [w.attempt, 'step:s', '1', RETENTION_MS, epoch]),
        seen,
      );
    }
    case 'complete': {
      const result = w.carried !== 0 ? w.carried : w.attempt;
      const seen = ctx.hooks.complete(model, call, w.attempt, w.epoch, result);
      const [receipt, index, breaker, count] = side.callKeys(call);
      const args = [w.attempt, RealSide.resultText(result), RETENTION_MS, side.rejectionsField, epoch];
      return compareObservation(side, 'complete', call, await side.script('complete', [receipt, index, breaker, count], args), seen);
    }
    case 'fail': {
      const seen = receipts.fail(model, call, w.attempt, w.epoch, true);
      const args = [w.attempt, 'never started', 'neverStarted', RETENTION_MS, epoch];
      return compareObservation(side, 'fail', call, await side.script('fail', transition, args), seen);
    }
    case 'outcomeUnknown': {
      await realTransaction.release(side, wi);
      const seen = receipts.outcomeUnknown(model, call, w.attempt, w.epoch);
      return compareObservation(
        side,
        'outcome-unknown',
        call,
        await side.script('outcome-unknown', transition, [w.attempt, 'unknown', RETENTION_MS, epoch]),
        seen,
      );
    }
    case 'txBegin':
    case 'txConfirm':
    case 'txInsert':
    case 'txCommit':
    case 'sweepLifetime':
    case 'lockLifetime':
    case 'readOutcome':
      return await realTransaction.step(side, ctx, pre, model, wi, choice);
    case 'effect':
    case 'stepEffect':
    case 'idle':
      return;
  }
}

/** A limit script on one reservation (its commit or its give-back), its code compared with the model's. */
async function onReservation(side: RealSide, script: 'limit-commit' | 'limit-release', id: number, model: number): Promise<void> {
  const reply = await side.script(script, side.limitKeys(), [side.realReservation(id)]);
  expectSame(script, 'error' in reply ? reply : reply[0], model);
}

/** The wrapper's one read of the receipt when a limit refused: its status and whether its lifetime is counted. */
async function boundOn(side: RealSide, pre: ProtocolState, call: number): Promise<void> {
  const [status, holder] = await side.redis.hmget(side.receiptKey(call), 'status', side.bindingField);
  const r = pre.receipts[call]!;
  const modelStatus = r.status === 'absent' ? null : r.status === 'awaiting' ? 'awaiting_approval' : r.status;
  expectSame(
    'the receipt as a refused call reads it',
    { status, counted: holder !== null },
    { status: modelStatus, counted: r.limitHolder !== 0 },
  );
}
