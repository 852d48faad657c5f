/**
 * What the checker found in the protocol: real defects, each a path the
 * scripts and the wrapper allowed that broke a promise.
 *
 * A known finding still stands: a scenario the default ones leave out
 * reaches it (so `npm run protocol-check` passes while it stands), and
 * test/protocol/findings.test.ts keeps it found and walks its path on the
 * real scripts to show they reach it too; once it is fixed that test fails,
 * and the finding moves to the fixed ones (its exclusion in scenarios.ts
 * goes).
 *
 * A fixed finding keeps its scenario and the protocol with the fix undone
 * (its hooks): the test shows the undone model still breaks there, the
 * model with the fix does not, and the broken path, walked on the real
 * scripts beside the fixed model, is refused where the fix refuses it.
 */
import { PROTOCOL_HOOKS, type ProtocolHooks } from './model/hooks.js';
import type { Scenario } from './model/state.js';
import { narrowed } from './scenarios.js';

export interface KnownFinding {
  readonly name: string;
  /** What goes wrong, and where. */
  readonly what: string;
  readonly scenario: Scenario;
  /** What the violation it leads to says. */
  readonly violation: RegExp;
}

export const KNOWN_FINDINGS: readonly KnownFinding[] = [];

/** A finding that was fixed: where it was found, and the protocol with its fix undone, which still breaks there. */
export interface FixedFinding extends KnownFinding {
  /** What the fix does. */
  readonly fix: string;
  /** The protocol's hooks with the fix undone. */
  readonly undone: ProtocolHooks;
}

export const FIXED_FINDINGS: readonly FixedFinding[] = [
  {
    name: 'a call that needs approval runs in a lifetime nobody approved',
    what:
      'the approval gate (approval-gate-3.lua) and the claim (claim-4.lua) are two scripts: when the receipt expires ' +
      'between them (a redelivery whose gate found it running, then a stall past its retention), the claim created a ' +
      'new lifetime without asking for approval, and the call ran again on the one approval it had',
    fix:
      'the claim of a call that needs approval (claim-4.lua ARGV[14]) refuses to create a lifetime (code 3), and the ' +
      'wrapper passes the approval gate again, which asks a person about the new lifetime',
    scenario: {
      ...narrowed('approvals', { kills: 1, expiries: 1, decisions: 1 }),
      name: 'approvals with receipt expiry',
      workers: 2,
      calls: [{ effect: 'opaque', approval: true, limited: false }],
    },
    violation: /ran 2 times on 1 approvals/,
    undone: { ...PROTOCOL_HOOKS, claimAsksApproval: false },
  },
  {
    name: 'a takeover records its verdict after PostgreSQL ended its session',
    what:
      'holdLifetime (src/transactional/takeover.ts) records the verdict in Redis from inside its transaction; when the ' +
      "takeover's worker stalls past the idle-in-transaction timeout there, the server ends its session and the " +
      'lifetime lock goes with it, a stalled attempt then confirms (its heartbeat succeeds: no verdict yet), inserts and ' +
      'commits, its lease lapses again, and the takeover, resumed, still recorded "not started" ' +
      '(reconcile-settle-3.lua checked only that the lease is lapsed now), with a history note saying nothing can commit',
    fix:
      'the takeover passes the time its reconcile began (reconcile-settle-3.lua ARGV[11]), and a verdict is refused ' +
      "when the judged attempt's lease was renewed after it (the confirm): the takeover claims again, and reads again",
    scenario: {
      ...narrowed('transactional', { stops: 2 }),
      name: 'transactional with takeover sessions ended',
      takeoverSessionsKept: false,
    },
    violation: /committed after a takeover had decided about it/,
    undone: { ...PROTOCOL_HOOKS, verdictSinceBegun: false },
  },
];
