/**
 * What the checker found in the protocol as main has it: real defects, each
 * a path the scripts and the wrapper allow that breaks a promise, found by
 * a scenario the default ones leave out (so `npm run protocol-check` passes
 * while they stand). test/protocol/findings.test.ts keeps each one found,
 * and walks its path on the real scripts to show they reach it too; once a
 * finding is fixed, that test fails, and the finding goes (with the
 * exclusion in scenarios.ts).
 */
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

export const KNOWN_FINDINGS: readonly KnownFinding[] = [
  {
    name: 'a call that needs approval runs in a lifetime nobody approved',
    what:
      'the approval gate (approval-gate-3.lua) and the claim (claim-4.lua) are two scripts: when the receipt expires ' +
      'between them (a redelivery whose gate found it running, then a stall past its retention), the claim creates a ' +
      'new lifetime without asking for approval, and the call runs again on the one approval it had',
    scenario: {
      ...narrowed('approvals', { kills: 1, expiries: 1, decisions: 1 }),
      name: 'approvals with receipt expiry',
      workers: 2,
      calls: [{ effect: 'opaque', approval: true, limited: false }],
    },
    violation: /ran 2 times on 1 approvals/,
  },
  {
    name: 'a takeover records its verdict after PostgreSQL ended its session',
    what:
      'holdLifetime (src/transactional/takeover.ts) records the verdict in Redis from inside its transaction; when the ' +
      "takeover's worker stalls past the idle-in-transaction timeout there, the server ends its session and the " +
      'lifetime lock goes with it, a stalled attempt then confirms (its heartbeat succeeds: no verdict yet), inserts and ' +
      'commits, its lease lapses again, and the takeover, resumed, still records "not started" ' +
      '(reconcile-settle-3.lua checks only that the lease is lapsed now), with a history note saying nothing can commit',
    scenario: {
      ...narrowed('transactional', { stops: 2 }),
      name: 'transactional with takeover sessions ended',
      takeoverSessionsKept: false,
    },
    violation: /committed after a takeover had decided about it/,
  },
];
