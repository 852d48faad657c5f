/**
 * A violation's path, replayed and printed step by step. The checker
 * numbered each move within the canonical state it came from (workers
 * sorted, ids renumbered); the replay runs the same moves on the state as
 * it really grows (each worker keeps its name, each id its value), mapping
 * each move's worker through the canonical order, so the trace reads as one
 * run of the system: "w2 claim", "tick", "w1 resumes".
 */
import { applyAction, enabledActions, type Action } from '../model/actions.js';
import { decodeState, encodeState } from '../model/encoding.js';
import type { ModelContext } from '../model/hooks.js';
import { checkState } from '../model/invariants.js';
import { initialState, type ProtocolState, type Receipt } from '../model/state.js';

export interface TraceStep {
  /** What was done, e.g. `w2 claim (reply lost)`. */
  readonly move: string;
  /** The parts of the state the move changed, one line each. */
  readonly changed: readonly string[];
}

export interface Trace {
  readonly steps: readonly TraceStep[];
  /** The moves as made on the state as it grows (workers by their own index): a path to walk again elsewhere. */
  readonly actions: readonly Action[];
  /** The violation the last step reaches, as the replay finds it again. */
  readonly violation: string | undefined;
}

const WORKER_MOVES = new Set(['step', 'heartbeat', 'deliver', 'kill', 'stop', 'lockLapse', 'resume', 'idleTimeout']);

const CHOICES: Record<string, readonly string[]> = {
  claim: ['', ' (reply lost)'],
  reclaim: ['', ' (reply lost)'],
  effect: ['', ': throws NeverStartedError, no effect', ': effect, then OutcomeUnknownError'],
  stepEffect: ['', ': throws NeverStartedError'],
  txInsert: ['', ': lock_timeout (contended)'],
  txCommit: ['', ': the tool throws, rollback'],
  fail: [' (the job retries)', ' (last attempt: the model is told)'],
};

/** A move in words, with worker names as `w<index + 1>` of `s`. */
export function describeMove(s: ProtocolState, action: Action): string {
  const w = `w${action.who + 1}`;
  switch (action.kind) {
    case 'step': {
      const worker = s.workers[action.who]!;
      const fenced =
        worker.fencedOut && (worker.pc === 'effect' || worker.pc === 'stepEffect')
          ? [' (signal aborted: effect anyway)', ' (signal aborted: stops)']
          : undefined;
      return `${w} ${worker.pc}${(fenced ?? CHOICES[worker.pc])?.[action.choice] ?? ''} [call ${worker.call}]`;
    }
    case 'heartbeat':
      return `${w} heartbeat`;
    case 'deliver':
      return `${w} takes the job of call ${action.choice}`;
    case 'kill':
      return `${w} is killed (SIGKILL)`;
    case 'stop':
      return `${w} is stopped (SIGSTOP)`;
    case 'lockLapse':
      return `${w}'s job lock lapses; its job is delivered again`;
    case 'resume':
      return `${w} resumes (SIGCONT)`;
    case 'idleTimeout':
      return `PostgreSQL ends ${w}'s idle transaction`;
    case 'tick':
      return 'tick: the Redis clock advances';
    case 'expire':
      return `call ${action.who}'s receipt expires (retention)`;
    case 'approverRead':
      return `the approver opens call ${action.who}'s approval`;
    case 'decide':
      return `the approver ${action.choice === 1 ? 'approves' : 'denies'} call ${action.who}`;
    case 'resolve':
      return `an operator resolves call ${action.who} as the provider says`;
  }
}

function receiptLine(r: Receipt): string {
  if (r.status === 'absent') return 'none';
  const parts = [r.status, `attempt ${r.attempts}`, `epoch e${r.epoch}`];
  if (r.status === 'running') parts.push(r.lease > 0 ? `lease ${r.lease}` : 'lease lapsed');
  if (r.ambiguous) parts.push('ambiguous_ms set');
  if (r.result !== 0) parts.push(`result r${r.result}`);
  if (r.reconcileLease > 0) parts.push(`reconcile lease ${r.reconcileLease}`);
  if (r.status === 'awaiting') parts.push(r.approvalLeft > 0 ? `approval expires in ${r.approvalLeft}` : 'approval expired');
  if (r.decidedBy !== 'none') parts.push(`decided by ${r.decidedBy}`);
  if (r.limitHolder !== 0) parts.push(`bound to reservation ${r.limitHolder}`);
  if (r.step) parts.push('step recorded');
  return parts.join(', ');
}

/** One line per part of the state, keyed so two summaries can be compared line by line. */
function summary(s: ProtocolState): Map<string, string> {
  const lines = new Map<string, string>();
  s.receipts.forEach((r, call) => {
    lines.set(`call ${call} receipt`, receiptLine(r));
    lines.set(`call ${call} job`, s.jobs[call]!);
    const rows = s.rows[call]!.map((row) => `e${row.epoch} ${row.state} by attempt ${row.attempt}`);
    if (rows.length > 0) lines.set(`call ${call} outcome rows`, rows.join('; '));
  });
  if (s.limit.reservations.length > 0 || s.limit.used > 0) {
    const held = s.limit.reservations.map(
      (r) => `${r.id}:call ${r.call} ${r.state}${r.state === 'pending' ? ` (deadline ${r.deadline})` : ''}`,
    );
    lines.set('limit', `used ${s.limit.used}, pending ${s.limit.pending} [${held.join(', ')}]`);
  }
  s.workers.forEach((w, i) => {
    const state =
      w.pc === 'idle'
        ? 'idle'
        : `${w.pc}, call ${w.call}, attempt ${w.attempt} e${w.epoch}${w.txn !== 'none' ? `, transaction ${w.txn}` : ''}`;
    lines.set(`w${i + 1}`, `${state}${w.stopped ? ' (stopped)' : ''}${w.lockLost ? ' (lock lost)' : ''}`);
  });
  return lines;
}

/** Replays `moves` (move indexes within each canonical state) from the scenario's initial state. */
export function replay(ctx: ModelContext, moves: readonly number[]): Trace {
  let state = initialState(ctx.scenario);
  let before = summary(state);
  const steps: TraceStep[] = [];
  const actions: Action[] = [];
  let violation: string | undefined;
  for (const move of moves) {
    const { bytes, order } = encodeState(state);
    const canonical = enabledActions(decodeState(bytes), ctx)[move];
    if (canonical === undefined) throw new Error(`the trace does not replay: no move ${move} at step ${steps.length + 1}`);
    const action = WORKER_MOVES.has(canonical.kind) ? { ...canonical, who: order[canonical.who]! } : canonical;
    const text = describeMove(state, action);
    actions.push(action);
    const applied = applyAction(state, ctx, action);
    state = applied.next;
    violation = applied.violation ?? checkState(state, ctx);
    const after = summary(state);
    const changed = [...after].filter(([key, line]) => before.get(key) !== line).map(([key, line]) => `${key}: ${line}`);
    steps.push({ move: text, changed });
    before = after;
  }
  return { steps, actions, violation };
}

/** A trace as text: each step numbered, with what it changed indented below it. */
export function formatTrace(trace: Trace): string {
  const lines = trace.steps.flatMap((step, i) => [`${String(i + 1).padStart(3)}. ${step.move}`, ...step.changed.map((c) => `       ${c}`)]);
  if (trace.violation !== undefined) lines.push(`  => ${trace.violation}`);
  return lines.join('\n');
}
