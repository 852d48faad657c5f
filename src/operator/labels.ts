/**
 * Words and times an operator reads about a receipt, shared by the CLI's
 * text and the console's pages: times on the Redis server's clock, spans,
 * one label for where a receipt stands, and a value as one safe token.
 * Plain text: each caller escapes for its own medium (a terminal, HTML).
 */
import { isAmbiguousRecord, isApprovalStatus, isContestedRecord, type ReceiptRecord } from '../redis/receipts/reads/record.js';

const INVISIBLE = /[\p{Cc}\p{Cf}\p{Co}\p{Cn}\p{Zl}\p{Zp}]/gu;
const BARE = /^[\p{L}\p{M}\p{N}\p{P}\p{S}]+$/u;

/** A character as a `\\u` escape. */
export function escapeChar(char: string): string {
  const cp = char.codePointAt(0) ?? 0;
  return cp > 0xffff ? `\\u{${cp.toString(16)}}` : `\\u${cp.toString(16).padStart(4, '0')}`;
}

/**
 * A value as one safe token: shown bare when it is only letters, digits,
 * punctuation and symbols; otherwise as a JSON string literal in which every
 * control, format or separator character is escaped too.
 */
export function token(value: string): string {
  if (BARE.test(value)) return value;
  return JSON.stringify(value).replace(INVISIBLE, escapeChar);
}

/** A server-clock time in ms as ISO 8601 UTC, to the second. */
export function isoTime(ms: number): string {
  const date = new Date(ms);
  return Number.isNaN(date.getTime()) ? String(ms) : date.toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/** A span in ms, compact: `850ms`, `12.3s`, `4m12s`, `3h04m`, `2d03h`. */
export function duration(ms: number): string {
  const abs = Math.abs(Math.round(ms));
  if (abs < 1000) return `${abs}ms`;
  if (abs < 60_000) return `${(Math.floor(abs / 100) / 10).toFixed(1)}s`;
  const pad = (n: number): string => String(n).padStart(2, '0');
  const s = Math.floor(abs / 1000);
  if (s < 3600) return `${Math.floor(s / 60)}m${pad(s % 60)}s`;
  const m = Math.floor(s / 60);
  if (m < 24 * 60) return `${Math.floor(m / 60)}h${pad(m % 60)}m`;
  const h = Math.floor(m / 60);
  return `${Math.floor(h / 24)}d${pad(h % 24)}h`;
}

/** `at` relative to `nowMs` (both on the server clock): `4m12s ago` or `in 12.3s`. */
export function relative(at: number, nowMs: number): string {
  return at <= nowMs ? `${duration(nowMs - at)} ago` : `in ${duration(at - nowMs)}`;
}

/** A server time with its distance from the read: `2025-06-01T12:00:03Z (4m12s ago)`. */
export function when(at: number | null, nowMs: number): string {
  return at === null ? '-' : `${isoTime(at)} (${relative(at, nowMs)})`;
}

/**
 * Since when a receipt has been ambiguous: when a claim flagged it, or, for
 * an opaque attempt no claim has found yet, when its lease ran out. `null`
 * when it is not ambiguous.
 */
export function ambiguousSinceMs(record: ReceiptRecord): number | null {
  if (!isAmbiguousRecord(record)) return null;
  return record.ambiguousMs ?? record.leaseUntilMs ?? record.updatedMs;
}

/**
 * One word (or two) for where a receipt stands, for an operator:
 * `ambiguous`, `ambiguous (contested: …)`, `running`, `running (lease
 * expired)`, `completed`, `completed (resolved)`, `completed (late)`, `failed`,
 * `failed (resolved)` or `failed (late)`; for a call that needed approval,
 * `awaiting approval`, `awaiting approval (expired)`, `approved (not started)`,
 * `denied` or `denied (expired)`.
 */
export function stateLabel(record: ReceiptRecord): string {
  if (isApprovalStatus(record.status)) return approvalStateLabel(record);
  if (isContestedRecord(record)) return 'ambiguous (contested: the attempt heartbeated after the verdict)';
  if (isAmbiguousRecord(record)) return 'ambiguous';
  if (record.status === 'running') return record.leaseExpired ? 'running (lease expired)' : 'running';
  if (record.resolvedMs !== null) return `${record.status} (resolved)`;
  return record.lateSettle !== null && record.lateSettle.attempt === record.attempts ? `${record.status} (late)` : record.status;
}

/** The lease of a receipt: `live, 12.3s left`, `expired 4s ago`, or `-` once settled. */
export function leaseLabel(record: ReceiptRecord): string {
  if (record.status !== 'running' || record.leaseUntilMs === null) return '-';
  return record.leaseExpired
    ? `expired ${duration(record.readAtMs - record.leaseUntilMs)} ago`
    : `live, ${duration(record.leaseUntilMs - record.readAtMs)} left`;
}

/** Where a call in an approval state stands (it has not run). */
function approvalStateLabel(record: ReceiptRecord): string {
  const expiresMs = record.approval?.expiresMs ?? null;
  if (record.status === 'awaiting_approval')
    return expiresMs !== null && expiresMs <= record.readAtMs ? 'awaiting approval (expired)' : 'awaiting approval';
  if (record.status === 'approved') return 'approved (not started)';
  return record.approval?.deniedReason === 'expired' ? 'denied (expired)' : 'denied';
}

/**
 * What a receipt records of the call's approval, one `[label, value]` per
 * line, plain text; empty for a call that never needed approval.
 */
export function approvalFacts(record: ReceiptRecord): [string, string][] {
  const a = record.approval;
  if (!a) return [];
  const now = record.readAtMs;
  const facts: [string, string][] = [
    ['approval reason', a.reason === null ? '-' : a.reason],
    ['approval shown', 'shown' in a ? (JSON.stringify(a.shown) ?? '-') : '(nothing: the tool has no redact hook; see the job)'],
    ['approval asked', when(a.requestedMs, now)],
    ['approval expires', when(a.expiresMs, now)],
    ['approval epoch', a.epoch === '' ? '-' : a.epoch],
    ['approval digest', a.argsHash],
  ];
  if (a.decision === null) facts.push(['approval decision', a.expiresMs !== null && a.expiresMs <= now ? 'none, and expired' : 'pending']);
  else {
    const how = a.deniedReason === 'expired' ? ' (expired: nobody decided in time)' : '';
    facts.push(['approval decision', `${a.decision}${how} by ${a.by ?? '-'}${a.source ? ` from ${a.source}` : ''}`]);
    facts.push(['approval decided', when(a.decidedMs, now)]);
    facts.push(['approval note', a.note ?? '-']);
  }
  return facts;
}
