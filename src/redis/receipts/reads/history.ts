/**
 * A receipt's audit trail, as the receipt hash keeps it (`lua/includes/history.lua`
 * writes it): `hist:<n>` fields each holding a small JSON object, and
 * `hist_seq`, the number of the last one written. Read back as
 * {@link ReceiptHistoryEntry}s.
 */
import { InvalidReceiptInputError } from '../../errors.js';
import { assertWellFormedNames } from '../../../core/identity.js';

/** Hash field prefix of an entry of the receipt's history: `hist:<n>`. */
export const HISTORY_FIELD_PREFIX = 'hist:';

/** Hash field holding the number of the last history entry written. */
export const HISTORY_SEQ_FIELD = 'hist_seq';

/**
 * How many history entries a receipt keeps: appending one past it drops the
 * oldest (`lua/includes/history.lua`).
 */
export const RECEIPT_HISTORY_CAP = 20;

/** What a history entry records. Entries a later version writes may carry other values. */
export type ReceiptHistoryWhat =
  | 'resolve.completed'
  | 'resolve.failed'
  | 'reconcile.completed'
  | 'reconcile.not_started'
  | 'reconcile.unknown'
  | 'late.completed'
  | 'late.failed';

/**
 * One entry of a receipt's audit trail: an operator's verdict, a reconcile's
 * verdict, or an attempt that settled late. Written by the script that made
 * the transition, kept across later attempts for as long as the receipt
 * lives (the last {@link RECEIPT_HISTORY_CAP}).
 */
export interface ReceiptHistoryEntry {
  /** Its number: 1 for the first entry the receipt ever got, then 2, 3, … */
  readonly seq: number;
  /** When (server clock, ms). */
  readonly atMs: number;
  /** What happened. */
  readonly what: ReceiptHistoryWhat | (string & {});
  /**
   * Who: the operator a resolve named, the reconciler's worker id, or the
   * worker of the attempt that settled late (`''` when not known).
   */
  readonly by: string;
  /** The attempt it is about. */
  readonly attempt: number;
  /** The operator's or the reconcile's note, if any. */
  readonly note: string | null;
  /** For a failed verdict or settle: the error text (its first 500 bytes). */
  readonly error: string | null;
  /** When the attempt had been reported ambiguous, if it had. */
  readonly ambiguousMs: number | null;
  /**
   * True for a settle that came after a verdict had already settled its
   * attempt: it was refused and changed nothing, and is kept so the trail
   * shows what the attempt reported (an effect the verdict said never
   * happened, say).
   */
  readonly refused: boolean;
}

/** One `hist:<n>` field's value as an entry; `null` for one that is not (edited by hand). */
export function parseHistoryEntry(seq: number, text: string): ReceiptHistoryEntry | null {
  let v: Record<string, unknown>;
  try {
    const parsed: unknown = JSON.parse(text);
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return null;
    v = parsed as Record<string, unknown>;
  } catch {
    // A hand-edited entry is left out rather than failing the whole read.
    return null;
  }
  const num = (x: unknown): number | null => (typeof x === 'number' && Number.isFinite(x) ? x : null);
  const text_ = (x: unknown): string | null => (typeof x === 'string' ? x : null);
  const atMs = num(v['at']);
  const what = text_(v['what']);
  if (atMs === null || what === null) return null;
  return {
    seq,
    atMs,
    what,
    by: text_(v['by']) ?? '',
    attempt: num(v['attempt']) ?? 0,
    note: text_(v['note']),
    error: text_(v['error']),
    ambiguousMs: num(v['ambiguous_ms']),
    refused: v['refused'] === true,
  };
}

/**
 * An operator's `by` or `note` for a resolve: absent, or non-blank,
 * well-formed text of at most `max` code units; otherwise
 * `InvalidReceiptInputError` (or `MalformedNameError`).
 */
export function checkVerdictText(value: unknown, name: 'by' | 'note', max: number): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || value.trim() === '' || value.length > max) {
    throw new InvalidReceiptInputError(`${name} must be non-blank text of at most ${max} characters, or left out`);
  }
  assertWellFormedNames({ [name]: value });
  return value;
}
