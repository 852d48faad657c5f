/**
 * Parsing of the observation every receipt script returns, and its mapping
 * onto the core's `ReceiptState`. Internal to the Redis layer.
 */
import type { EffectResumability, ReceiptState } from '../../../core/decision.js';
import { UnexpectedScriptReplyError, type ObservedFence, type ReceiptStatus } from '../../errors.js';

/** What a script saw (or left) in a receipt, on the server clock. */
export interface Observation {
  readonly code: number;
  /** `null` when no receipt exists. */
  readonly status: ReceiptStatus | null;
  readonly attempts: number;
  readonly leaseExpired: boolean;
  readonly leaseRemainingMs: number;
  /** Stored effect; `null` when absent or unreadable. */
  readonly effect: EffectResumability | null;
  /** JSON text of the result when completed, `''` when none. */
  readonly resultText: string;
  readonly ambiguousMs: number | null;
  readonly nowMs: number;
  readonly leaseUntilMs: number | null;
  /** The lifetime's epoch; `''` when absent (no receipt, or one written before epochs existed). */
  readonly epoch: string;
}

const STATUSES: readonly string[] = ['running', 'completed', 'failed'];

/** How many fields an observation reply has (see lua/includes/observe-receipt.lua). */
const OBSERVATION_FIELDS = 11;

function text(value: unknown): string {
  if (typeof value === 'string') return value;
  if (typeof value === 'number') return String(value);
  if (Buffer.isBuffer(value)) return value.toString('utf8');
  return '';
}

function int(value: unknown, script: string, reply: unknown): number {
  const n = typeof value === 'number' ? value : Number(text(value));
  if (!Number.isSafeInteger(n)) throw new UnexpectedScriptReplyError(script, reply);
  return n;
}

/** Parses `{ code, status, attempts, expired, remaining, effect, result, ambiguous_ms, now, lease_until, epoch }`. */
export function parseObservation(script: string, reply: unknown): Observation {
  if (!Array.isArray(reply) || reply.length !== OBSERVATION_FIELDS) throw new UnexpectedScriptReplyError(script, reply);
  return observationFields(script, reply);
}

/** What the claim script returns: the observation, then the tool's breaker state in the run. */
export interface ClaimObservation extends Observation {
  /** The tool's removal reason for the run; `null` when it is not removed. */
  readonly toolRemoval: string | null;
  /** The tool's current streak of consecutive rejections in the run (0 when unset). */
  readonly rejectionStreak: number;
}

/**
 * Parses the claim script's reply: the observation fields, then
 * `removal` (text, `''` when none) and `rejections` (a non-negative integer).
 * Codes are 0 (exists), 1 (created) and 2 (tool removed, no receipt); code 1
 * and 2 only ever come with the state they imply.
 */
export function parseClaimObservation(script: string, reply: unknown): ClaimObservation {
  if (!Array.isArray(reply) || reply.length !== OBSERVATION_FIELDS + 2) throw new UnexpectedScriptReplyError(script, reply);
  const removal = reply[OBSERVATION_FIELDS];
  if (typeof removal !== 'string' && !Buffer.isBuffer(removal)) throw new UnexpectedScriptReplyError(script, reply);
  const rejectionStreak = int(reply[OBSERVATION_FIELDS + 1], script, reply);
  if (rejectionStreak < 0) throw new UnexpectedScriptReplyError(script, reply);
  const removalText = text(removal);
  const observed = observationFields(script, reply, removalText === '' ? null : removalText, rejectionStreak);
  const consistent =
    observed.code === 0
      ? observed.status !== null
      : observed.code === 1
        ? observed.status === 'running' && removalText === '' && observed.epoch !== ''
        : observed.code === 2 && observed.status === null && removalText !== '';
  if (!consistent) throw new UnexpectedScriptReplyError(script, reply);
  return observed;
}

/**
 * The observation fields of a reply whose length the caller has checked.
 * Every observation is built with the claim's two breaker fields (neutral
 * for other scripts), so one object shape serves both: spreading an
 * observation into a claim's cost every claim a few microseconds.
 */
function observationFields(
  script: string,
  reply: readonly unknown[],
  toolRemoval: string | null = null,
  rejectionStreak = 0,
): ClaimObservation {
  const status = text(reply[1]);
  if (status !== '' && !STATUSES.includes(status)) throw new UnexpectedScriptReplyError(script, reply);
  const effect = text(reply[5]);
  const ambiguous = text(reply[7]);
  const leaseUntil = int(reply[9], script, reply);
  return {
    code: int(reply[0], script, reply),
    status: status === '' ? null : (status as ReceiptStatus),
    attempts: int(reply[2], script, reply),
    leaseExpired: int(reply[3], script, reply) === 1,
    leaseRemainingMs: int(reply[4], script, reply),
    effect: effect === 'resumable' || effect === 'opaque' ? effect : null,
    resultText: text(reply[6]),
    ambiguousMs: ambiguous === '' ? null : int(ambiguous, script, reply),
    nowMs: int(reply[8], script, reply),
    leaseUntilMs: leaseUntil > 0 ? leaseUntil : null,
    epoch: text(reply[10]),
    toolRemoval,
    rejectionStreak,
  };
}

/** The core's view of an observation. */
export function toReceiptState(observation: Observation): ReceiptState {
  switch (observation.status) {
    case null:
      return { kind: 'absent' };
    case 'completed':
      return { kind: 'completed' };
    case 'failed':
      return { kind: 'failed', attempts: observation.attempts };
    case 'running':
      return {
        kind: 'running',
        attempts: observation.attempts,
        leaseExpired: observation.leaseExpired,
        reportedAmbiguous: observation.ambiguousMs !== null,
      };
  }
}

/** Status, attempts and epoch, for a fence error; `null` when absent. */
export function toFence(observation: Observation): ObservedFence | null {
  return observation.status === null ? null : { status: observation.status, attempts: observation.attempts, epoch: observation.epoch };
}
