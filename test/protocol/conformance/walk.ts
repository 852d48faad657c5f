/**
 * The conformance walk: a path through the model, each move chosen among
 * the moves the model allows (by a list of numbers fast-check draws), made
 * on the model and for real (steps.ts), and after each move every receipt,
 * the limit's count and the committed outcome rows read back from the real
 * servers and compared with the model's state. The model's clock ticks are
 * the server's (real-side.ts); a move that would start late in a tick lets
 * the clock tick first (a move the model allows at any time).
 */
import { applyAction, enabledActions, type Action } from '../../../protocol/model/actions.js';
import type { ModelContext } from '../../../protocol/model/hooks.js';
import { REVOKED } from '../../../protocol/model/limit-scripts.js';
import { initialState, type ProtocolState, type Receipt } from '../../../protocol/model/state.js';
import { describeMove } from '../../../protocol/checker/trace.js';
import { Divergence, expectSame, FellBehind } from './divergence.js';
import { RealSide } from './real-side.js';
import { realMove } from './moves.js';

const STATUS: Record<string, Receipt['status']> = {
  running: 'running',
  completed: 'completed',
  failed: 'failed',
  awaiting_approval: 'awaiting',
  approved: 'approved',
  denied: 'denied',
};

/** The fields of a receipt the protocol reads, as they mean something for its status (the same for both sides). */
function receiptView(r: Receipt): Record<string, unknown> {
  if (r.status === 'absent') return { status: 'absent' };
  const approvalState = r.status === 'awaiting' || r.status === 'approved' || r.status === 'denied';
  return {
    status: r.status,
    epoch: r.epoch,
    approvalEpoch: r.approvalEpoch,
    decidedBy: r.decidedBy,
    ...(r.status === 'awaiting' ? { approvalLeft: r.approvalLeft, effect: r.effect } : {}),
    ...(approvalState
      ? {}
      : {
          attempts: r.attempts,
          effect: r.effect,
          ambiguous: r.ambiguous,
          token: r.token,
          reconciles: r.reconciles,
          reconcileLease: r.reconcileLease,
          step: r.step,
          limitHolder: r.limitHolder,
          limitAttempt: r.limitAttempt,
          ...(r.status === 'running' ? { lease: r.lease } : {}),
          ...(r.status === 'completed' ? { result: r.result } : {}),
          ...(r.status === 'failed' ? { neverStarted: r.neverStarted } : {}),
        }),
  };
}

/** A receipt read back from Redis, in the model's terms. */
async function realReceipt(side: RealSide, call: number): Promise<Record<string, unknown>> {
  const h = await side.redis.hgetall(side.receiptKey(call));
  if (h['status'] === undefined) return { status: 'absent' };
  const status = STATUS[h['status']] ?? (`unknown status ${h['status']}` as Receipt['status']);
  const id = (token: string | undefined) => side.modelId(call, token ?? '') ?? `unknown token ${token}`;
  const approvalState = status === 'awaiting' || status === 'approved' || status === 'denied';
  const by = h['approval_by'] === undefined ? 'none' : h['approval_by'] === 'expiry' ? 'expiry' : 'approver';
  const ticks = (field: string) => (h[field] === undefined ? 0 : side.ticksLeft(Number(h[field])));
  const receipt: Receipt = {
    status,
    attempts: Number(h['attempts'] ?? 0),
    epoch: id(h['epoch']) as number,
    effect: h['effect'] as Receipt['effect'],
    lease: ticks('lease_until_ms'),
    ambiguous: h['ambiguous_ms'] !== undefined,
    result: h['result'] === undefined ? 0 : RealSide.resultOf(h['result']),
    neverStarted: h['tier'] === 'neverStarted',
    token: id(h['claim_token']) as number,
    reconciles: Number(h['reconciles'] ?? 0),
    reconcileLease: ticks('reconciling_until_ms'),
    step: h['step:s'] !== undefined,
    approvalEpoch: (approvalState ? id(h['epoch']) : id(h['approval_epoch'])) as number,
    approvalLeft: ticks('approval_expires_ms'),
    decidedBy: by,
    limitHolder: h[side.bindingField] === undefined ? 0 : (side.modelReservation(h[side.bindingField]!) ?? -1),
    limitAttempt: Number(h[`${side.bindingField}:attempt`] ?? 0),
    // Not a stored field: reconcile-settle-3.lua compares lease_until_ms with its begin's time (its answer is compared).
    renewed: false,
  };
  return receiptView(receipt);
}

/** The limit's count, its reservations and the run's bindings, read back, in the model's terms. */
async function realLimit(side: RealSide, calls: number): Promise<unknown> {
  const [stateKey, dueKey] = side.limitKeys();
  const state = await side.redis.hgetall(stateKey);
  const due = new Map<string, number>();
  const scores = await side.redis.zrange(dueKey, 0, -1, 'WITHSCORES');
  for (let i = 0; i < scores.length; i += 2) due.set(scores[i]!, Number(scores[i + 1]));
  const reservations = Object.entries(state)
    .filter(([field]) => field.startsWith('r:'))
    .map(([field, text]) => {
      const real = field.slice(2);
      const [, , mark, receiptKey] = text.split(' ');
      const call = side.callOf(receiptKey ?? '');
      const pending = mark === 'p';
      return { id: side.modelReservation(real) ?? -1, call, pending, deadline: pending ? side.ticksLeft(due.get(real) ?? 0) : 0 };
    })
    .sort((a, b) => a.id - b.id);
  const bindings = Object.entries(await side.redis.hgetall(side.bindingsKey()))
    .map(([real, value]) => [side.modelReservation(real) ?? -1, value === 'revoked' ? REVOKED : side.callOf(value)])
    .sort((a, b) => a[0]! - b[0]!);
  // The receipt's pending reservation, p:<receipt key> (one a redelivery reuses).
  const pendingFor = Array.from({ length: calls }, (_, call) => {
    const id = state[`p:${side.receiptKey(call)}`];
    return id === undefined ? 0 : (side.modelReservation(id) ?? -1);
  });
  return { used: Number(state['used'] ?? 0), pending: Number(state['pending'] ?? 0), reservations, pendingFor, bindings };
}

function modelLimit(s: ProtocolState): unknown {
  return {
    used: s.limit.used,
    pending: s.limit.pending,
    reservations: s.limit.reservations
      .map((r) => ({ id: r.id, call: r.call, pending: r.state === 'pending', deadline: r.state === 'pending' ? r.deadline : 0 }))
      .sort((a, b) => a.id - b.id),
    pendingFor: s.limit.pendingFor,
    bindings: [...s.limit.bindings].sort((a, b) => a[0] - b[0]),
  };
}

/** Every receipt, the limit, and the committed outcome rows, read back and compared with the model's state. */
async function compareState(side: RealSide, ctx: ModelContext, s: ProtocolState): Promise<void> {
  for (let call = 0; call < s.receipts.length; call++) {
    expectSame(`call ${call}'s receipt`, await realReceipt(side, call), receiptView(s.receipts[call]!));
  }
  if (ctx.scenario.limitMax > 0) expectSame('the limit', await realLimit(side, s.receipts.length), modelLimit(s));
  if (side.observer === undefined) return;
  for (let call = 0; call < s.receipts.length; call++) {
    const rows = await side.observer.query(`SELECT epoch, attempt FROM ${side.table} WHERE receipt_key = $1`, [side.receiptKey(call)]);
    const real = rows.rows.map((row) => ({ epoch: side.modelId(call, String(row['epoch'])) ?? -1, attempt: Number(row['attempt']) }));
    const model = s.rows[call]!.filter((row) => row.state === 'committed').map((row) => ({ epoch: row.epoch, attempt: row.attempt }));
    const order = (a: { epoch: number }, b: { epoch: number }) => a.epoch - b.epoch;
    expectSame(`call ${call}'s committed outcome rows`, real.sort(order), model.sort(order));
  }
}

/** Moves with nothing real to make: the servers are as they were, so there is nothing new to compare. */
const MODEL_ONLY = new Set<Action['kind']>(['deliver', 'stop', 'resume', 'lockLapse']);

/**
 * The moves the walks of this process made, by kind (a worker's step by the
 * place it stepped from): `PROTOCOL_COVERAGE=1` prints them after the
 * conformance test, to see which transitions random walks reach.
 */
export const covered = new Map<string, number>();

/** Makes `action` for real and in the model, and compares what the servers then hold with the model's state. */
async function move(side: RealSide, ctx: ModelContext, state: ProtocolState, action: Action, log: string[]): Promise<ProtocolState> {
  const kind = action.kind === 'step' ? `step ${state.workers[action.who]!.pc}` : action.kind;
  covered.set(kind, (covered.get(kind) ?? 0) + 1);
  log.push(describeMove(state, action));
  await realMove(side, ctx, state, action);
  if (side.late) throw new FellBehind(`the walk fell behind the clock at: ${log.at(-1)}`);
  const next = applyAction(state, ctx, action).next;
  if (!MODEL_ONLY.has(action.kind)) await compareState(side, ctx, next);
  return next;
}

/** The clock ticks: the real one to the next whole tick, the model's too (when anything in it still counts down). */
async function tick(side: RealSide, ctx: ModelContext, s: ProtocolState, log: string[]): Promise<ProtocolState> {
  await side.untilTick(side.tick + 1);
  const ticking = enabledActions(s, ctx).find((a) => a.kind === 'tick');
  log.push(`tick ${side.tick}`);
  if (ticking === undefined) return s;
  const next = applyAction(s, ctx, ticking).next;
  await compareState(side, ctx, next);
  return next;
}

/**
 * The moves to pick from, a worker's step three times over: faults and the
 * clock are there to interrupt calls, and a walk mostly of faults would
 * rarely take a call as far as its takeover or its settle.
 */
function weighted(actions: readonly Action[]): Action[] {
  return actions.flatMap((a) => (a.kind === 'step' ? [a, a, a] : [a]));
}

/**
 * Walks the model along `picks` (each picks one of the moves allowed then,
 * modulo their number), making every move for real; `log` gets each move in
 * words. Throws {@link Divergence} at the first disagreement.
 */
export async function walk(side: RealSide, ctx: ModelContext, picks: readonly number[], log: string[]): Promise<void> {
  let state = initialState(ctx.scenario);
  await side.startClock();
  for (const pick of picks) {
    if ((await side.intoTick()) > side.tickBudgetMs) state = await tick(side, ctx, state, log);
    const actions = weighted(enabledActions(state, ctx));
    if (actions.length === 0) return;
    const action: Action = actions[pick % actions.length]!;
    if (action.kind === 'tick') {
      state = await tick(side, ctx, state, log);
      continue;
    }
    state = await move(side, ctx, state, action, log);
  }
}

/**
 * Walks the model along a fixed path (moves as trace.ts replays them),
 * making every move for real, until the path ends or leaves what the model
 * allows; answers how many moves were made. A walk along a fixed path must
 * not be made to tick early, so it fails if it falls behind the clock (give
 * its side long ticks).
 */
export async function walkPath(side: RealSide, ctx: ModelContext, path: readonly Action[], log: string[]): Promise<number> {
  let state = initialState(ctx.scenario);
  await side.startClock();
  let made = 0;
  for (const wanted of path) {
    if (wanted.kind === 'tick') {
      state = await tick(side, ctx, state, log);
      made++;
      continue;
    }
    if ((await side.intoTick()) > side.tickBudgetMs) throw new FellBehind('the walk fell behind the clock; give it longer ticks');
    const action = enabledActions(state, ctx).find((a) => a.kind === wanted.kind && a.who === wanted.who && a.choice === wanted.choice);
    if (action === undefined) return made;
    state = await move(side, ctx, state, action, log);
    made++;
  }
  return made;
}

/** How often a fixed path is walked again from the start (on fresh keys) when a busy machine put it behind the clock. */
const PATH_TRIES = 3;

/**
 * Walks a fixed path on a fresh real side from `sideOf()` (see
 * {@link walkPath}), from the start again, on a fresh side, when it fell
 * behind the clock; answers the moves made and their log. Any other error
 * is thrown with the moves that led to it.
 */
export async function walkFixedPath(
  sideOf: () => RealSide,
  ctx: ModelContext,
  path: readonly Action[],
): Promise<{ made: number; log: string[] }> {
  for (let tries = 1; ; tries++) {
    const side = sideOf();
    const log: string[] = [];
    try {
      return { made: await walkPath(side, ctx, path, log), log };
    } catch (error) {
      if (error instanceof FellBehind && tries < PATH_TRIES) continue;
      if (error instanceof Divergence) {
        throw new Divergence(`${error.message}\nthe moves:\n  ${log.join('\n  ')}`, { cause: error });
      }
      throw error;
    } finally {
      await side.closeAll();
    }
  }
}

export { Divergence, FellBehind };
