/**
 * The scenarios `npm run protocol-check` explores, each a set of workers
 * and calls, the faults one path may hold, and the depth (in moves) the
 * search goes to by default; and the smaller depths the test suite runs.
 * Together they cover every script and wrapper step the model has.
 */
import type { SeededDefect } from './model/defects.js';
import type { Budgets, CallSpec, Scenario } from './model/state.js';

const NO_FAULTS: Budgets = { kills: 0, stops: 0, expiries: 0, lostReplies: 0, resolves: 0, decisions: 0, failures: 0 };
const TICKS = { lease: 2, approval: 2, reservation: 2, reconcile: 2 };

const call = (effect: CallSpec['effect'], extra: Partial<CallSpec> = {}): CallSpec => ({
  effect,
  approval: false,
  limited: false,
  ...extra,
});

/** A scenario, and how deep the default check and the test suite's quick check explore it. */
export interface CheckedScenario {
  readonly scenario: Scenario;
  readonly depth: number;
  readonly quickDepth: number;
}

export const SCENARIOS: readonly CheckedScenario[] = [
  {
    // The receipts alone: an opaque and a resumable call, three workers, every fault once.
    scenario: {
      name: 'receipts',
      workers: 3,
      calls: [call('opaque'), call('resumable')],
      limitMax: 0,
      ticks: TICKS,
      budgets: { ...NO_FAULTS, kills: 1, stops: 1, expiries: 1, lostReplies: 1, resolves: 1, failures: 1 },
    },
    depth: 19,
    quickDepth: 8,
  },
  {
    // A transactional call settled from its outcome row: stalls inside the open transaction (the takeover's too, past
    // PostgreSQL's idle timeout), kills, rollbacks.
    scenario: {
      name: 'transactional',
      workers: 3,
      calls: [call('transactional')],
      limitMax: 0,
      ticks: TICKS,
      budgets: { ...NO_FAULTS, kills: 1, stops: 2, expiries: 1, lostReplies: 1, failures: 1 },
    },
    depth: 22,
    quickDepth: 10,
  },
  {
    // A call a person approves: two racing decisions, an expiry, a worker killed or stopped around the claim, the
    // receipt expiring (between the gate and the claim too).
    scenario: {
      name: 'approvals',
      workers: 3,
      calls: [call('opaque', { approval: true }), call('resumable', { approval: true })],
      limitMax: 0,
      ticks: TICKS,
      budgets: { ...NO_FAULTS, kills: 1, stops: 1, expiries: 1, decisions: 3, lostReplies: 1 },
    },
    depth: 18,
    quickDepth: 10,
  },
  {
    // Two calls under a limit of one: reserve, bind, commit, give back, settle, under kills and stops.
    scenario: {
      name: 'limits',
      workers: 3,
      calls: [call('opaque', { limited: true }), call('resumable', { limited: true })],
      limitMax: 1,
      ticks: TICKS,
      budgets: { ...NO_FAULTS, kills: 1, stops: 1, failures: 1 },
    },
    depth: 19,
    quickDepth: 9,
  },
];

/** `name`'s scenario with only the faults `budgets` names: a narrower search that goes deeper in the same time. */
export function narrowed(name: string, budgets: Partial<Budgets>): Scenario {
  const found = SCENARIOS.find((s) => s.scenario.name === name);
  if (found === undefined) throw new Error(`no scenario is named ${JSON.stringify(name)}`);
  return { ...found.scenario, name: `${name} (${Object.keys(budgets).join(', ')})`, budgets: { ...NO_FAULTS, ...budgets } };
}

/** Where each seeded defect is looked for: a default scenario with only the faults it needs, so the search is quick. */
export const DEFECT_SCENARIOS: Record<SeededDefect, Scenario> = {
  'the epoch checked before the status in an approval decision': narrowed('approvals', { decisions: 2 }),
  'a takeover that decides while a stalled transaction can still commit': narrowed('transactional', { stops: 1 }),
  'a limit reservation that a redelivery cannot recognise': narrowed('limits', { kills: 1 }),
  'a complete that does not check the epoch': narrowed('receipts', { stops: 1, expiries: 1 }),
  'a reclaim that does not flag an opaque receipt ambiguous': narrowed('receipts', { kills: 1 }),
};
