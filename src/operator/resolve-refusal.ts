/**
 * Why the store refused an operator's `resolve`, in one sentence that says
 * exactly what differs between what the operator typed and the receipt: the
 * attempt typed against the receipt's, an epoch that never was this
 * receipt's against one of a lifetime that ended, or a verdict someone (or
 * the attempt itself) already gave.
 */
import { ContestedReceiptError, FencedOutError, NotAmbiguousError, type ObservedFence } from '../redis/errors.js';
import { epochOrigin } from '../redis/receipts/transitions/epochs.js';
import type { ReceiptHistoryEntry, ReceiptRecord } from '../redis/receipts/reads/record.js';
import type { Resolution } from '../redis/receipts/store.js';
import { ResolveRefusedError, type ResolveRefusal } from './errors.js';
import { token, when } from './labels.js';

/** `by alice 4m12s ago` for a history entry. */
function byWhom(entry: ReceiptHistoryEntry, nowMs: number): string {
  return `${entry.by === '' ? '' : `by ${token(entry.by)} `}${when(entry.atMs, nowMs)}`;
}

/** Who settled `attempt`, as the receipt's history tells it; `null` when it does not. */
function settledBy(record: ReceiptRecord, attempt: number): string | null {
  const entry = [...record.history].reverse().find((e) => e.attempt === attempt && !e.refused && e.what !== 'reconcile.unknown');
  if (entry === undefined) return null;
  const [kind, outcome] = entry.what.split('.') as [string, string | undefined];
  const how =
    kind === 'resolve'
      ? `an operator resolved it ${outcome}`
      : kind === 'reconcile'
        ? `a reconcile found it ${outcome === 'not_started' ? 'never started' : outcome}`
        : `its own attempt settled it ${outcome} late`;
  return `${how} ${byWhom(entry, record.readAtMs)}`;
}

/** The sentence and reason for an epoch that is not the receipt's. */
function epochDiffers(redisKey: string, typed: string, observed: ObservedFence, record: ReceiptRecord): [ResolveRefusal, string] {
  const now = `this lifetime began ${when(record.createdMs, record.readAtMs)} under epoch ${token(observed.epoch || '(none)')} and is ${observed.status} at attempt ${observed.attempts}`;
  switch (epochOrigin(typed, redisKey)) {
    case 'this-receipt':
      return [
        'epoch_lifetime_ended',
        `the epoch you typed, ${token(typed)}, is of an earlier lifetime of this call, which ended: that receipt expired and the call was claimed again (${now}); your verdict was about the lifetime that ended`,
      ];
    case 'not-this-receipt':
      return [
        'epoch_never_this_receipts',
        `the epoch you typed, ${token(typed)}, never was this receipt's (${now}): check what you typed, or whether you copied another receipt's epoch`,
      ];
    default:
      return [
        'epoch_differs',
        `the epoch you typed, ${token(typed)}, is not this receipt's (${now}); it is of the older form without a check, so whether it is mistyped or of a lifetime that ended cannot be told`,
      ];
  }
}

/** The sentence and reason for attempts that differ, epoch aside. */
function attemptsDiffer(typed: number, observed: ObservedFence, record: ReceiptRecord): [ResolveRefusal, string] {
  const at = `you typed --attempts ${typed}, the receipt is at attempt ${observed.attempts}`;
  if (typed > observed.attempts) {
    return [
      'attempt_mismatch',
      `${at} (${observed.status}): it has never reached attempt ${typed}; check what you typed (show prints the attempts)`,
    ];
  }
  const later =
    observed.attempts - typed === 1 ? 'one more attempt has started' : `${observed.attempts - typed} more attempts have started`;
  const settled = settledBy(record, typed);
  return [
    'attempt_mismatch',
    `${at} (${observed.status}): ${later} since attempt ${typed}${settled === null ? '' : `, after ${settled}`}; resolve what the receipt is now, if anything`,
  ];
}

/**
 * Turns the store's refusal of `resolution` into a {@link ResolveRefusedError}
 * whose sentence says what differs, judged against `record` (the receipt as
 * read just before resolving: its history, when its lifetime began), with
 * `lookAgain` (how to look at the receipt again with the tool in use)
 * appended. Other errors pass through.
 */
export function resolveRefusal(redisKey: string, resolution: Resolution, record: ReceiptRecord, err: unknown, lookAgain = ''): unknown {
  const look = lookAgain;
  const refused = (reason: ResolveRefusal, why: string) =>
    new ResolveRefusedError(redisKey, `not resolved, nothing was written: ${why}${look}`, err, reason);
  if (err instanceof ContestedReceiptError) return refused('contested', err.message);
  if (err instanceof NotAmbiguousError) return refused('not_ambiguous', err.message);
  if (!(err instanceof FencedOutError)) return err;
  const observed = err.observed;
  const typed = resolution.attemptsSeen;
  if (observed === null) return refused('gone', 'the receipt no longer exists (it expired since you looked)');
  if (resolution.epochSeen !== undefined && observed.epoch !== resolution.epochSeen) {
    return refused(...epochDiffers(redisKey, resolution.epochSeen, observed, record));
  }
  if (observed.attempts !== typed) return refused(...attemptsDiffer(typed, observed, record));
  if (observed.status !== 'running') {
    const settled = settledBy(record, typed);
    return refused(
      'settled',
      `attempt ${typed} is already ${observed.status}: ${settled ?? 'its own attempt settled it, or it was resolved before the history existed'}`,
    );
  }
  return refused('moved_on', err.message);
}
