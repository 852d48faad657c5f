/**
 * The moves of the walk other than a worker's step, made for real: a
 * heartbeat, a kill or a session the server ends, a receipt's expiry, the
 * approver's form and decision, an operator's resolve (a tick is the
 * walk's own: see walk.ts). Each compared with the model as steps.ts
 * compares a step.
 */
import type { Action } from '../../../protocol/model/actions.js';
import type { ModelContext } from '../../../protocol/model/hooks.js';
import * as receipts from '../../../protocol/model/receipt-scripts.js';
import { cloneState, OPERATOR_RESULT, type ProtocolState } from '../../../protocol/model/state.js';
import { Divergence, expectSame } from './divergence.js';
import { RealSide, RETENTION_MS } from './real-side.js';
import { compareObservation, realStep } from './steps.js';
import { realTransaction } from './transactions.js';

/** Makes a move other than a worker's step for real (a tick is the walk's: see walk.ts). */
export async function realMove(side: RealSide, ctx: ModelContext, pre: ProtocolState, action: Action): Promise<void> {
  const model = cloneState(pre);
  switch (action.kind) {
    case 'step':
      return await realStep(side, ctx, pre, action.who, action.choice);
    case 'heartbeat': {
      const w = pre.workers[action.who]!;
      const seen = receipts.heartbeat(model, ctx, w.call, w.attempt, w.epoch);
      const args = [w.attempt, side.deadlineMs(ctx.scenario.ticks.lease), RETENTION_MS, side.real(w.call, w.epoch)];
      return compareObservation(side, 'heartbeat', w.call, await side.script('heartbeat', side.transitionKeys(w.call), args), seen);
    }
    case 'kill':
      return await realTransaction.kill(side, action.who);
    case 'idleTimeout':
      return await realTransaction.endSession(side, action.who);
    case 'expire':
      await side.redis.del(side.receiptKey(action.who));
      return;
    case 'approverRead': {
      const real = await side.redis.hget(side.receiptKey(action.who), 'epoch');
      return expectSame('the approval form', side.modelId(action.who, real ?? ''), pre.receipts[action.who]!.epoch);
    }
    case 'decide': {
      const call = action.who;
      const answer = ctx.hooks.decideApproval(model, call, pre.forms[call]!, action.choice === 1);
      const args = [
        side.real(call, pre.forms[call]!),
        `args${call}`,
        action.choice === 1 ? 'approve' : 'deny',
        'approver',
        '',
        'code',
        RETENTION_MS,
      ];
      const reply = await side.script('decide-approval', side.approvalKeys(call), args);
      if ('error' in reply) throw new Divergence(`decide-approval: ${reply.error}`);
      const real = reply[0] === 'ok' ? { kind: 'ok', what: reply[1] } : { kind: 'refused', what: reply[1], by: by(reply[3]) };
      const expected = answer.kind === 'ok' ? { kind: 'ok', what: answer.decision } : { kind: 'refused', what: answer.why, by: answer.by };
      return expectSame('decide-approval', real, expected);
    }
    case 'resolve': {
      const call = action.who;
      const r = pre.receipts[call]!;
      const ran = pre.ghosts.some((g) => g.call === call && g.epoch === r.epoch && g.executed);
      const seen = receipts.resolve(model, call, r.attempts, r.epoch, ran ? 'completed' : 'failed', OPERATOR_RESULT);
      const args = [
        r.attempts,
        ran ? 'completed' : 'failed',
        ran ? RealSide.resultText(OPERATOR_RESULT) : 'not sent',
        RETENTION_MS,
        side.real(call, r.epoch),
      ];
      return compareObservation(
        side,
        'resolve',
        call,
        await side.script('resolve', side.transitionKeys(call), [...args, 'operator', '']),
        seen,
      );
    }
    case 'deliver':
    case 'stop':
    case 'resume':
    case 'lockLapse':
    case 'tick':
      return;
  }
}

/** Who a refused decision names, in the model's terms. */
const by = (text: unknown): string =>
  text === 'expiry' ? 'expiry' : text === '' || text === null || text === undefined ? 'none' : 'approver';
