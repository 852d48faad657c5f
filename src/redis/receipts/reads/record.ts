/**
 * A receipt as read back for inspection: every field of the hash, typed, with
 * lease expiry judged on the server clock at the time of the read.
 * Over 300 lines: the record's type and its one parser (approval fields
 * included) are kept together so every field is typed where it is read.
 */
import type { ReceiptEffect } from '../../../core/decision.js';
import type { ToolCallReceiptKey } from '../../../core/identity.js';
import {
  CorruptReceiptError,
  RECEIPT_SCHEMA_VERSION,
  ReceiptVersionError,
  UnexpectedScriptReplyError,
  type ApprovalStatus,
  type ReceiptRecordStatus,
} from '../../errors.js';
import { receiptCallOf } from '../../key-parts.js';
import { COMPACT_RECEIPT_SCHEMA } from '../../keys.js';
import { fromStoredJson } from '../channel.js';
import { HISTORY_FIELD_PREFIX, HISTORY_SEQ_FIELD, parseHistoryEntry, type ReceiptHistoryEntry } from './history.js';

export type { ApprovalStatus, ReceiptRecordStatus } from '../../errors.js';

const APPROVAL_STATES: ReadonlySet<string> = new Set<ApprovalStatus>(['awaiting_approval', 'approved', 'denied']);

/** Whether a status is one of the approval states ({@link ApprovalStatus}). */
export function isApprovalStatus(status: string): status is ApprovalStatus {
  return APPROVAL_STATES.has(status);
}

/**
 * A call's approval as its receipt records it: what the approver was shown
 * and, once decided, who decided and when. Kept after an approved call
 * starts (its status is then the call's own).
 */
export interface ReceiptApproval {
  /** Why the call needs approval, as the tool's rule said (`null` when none was given). */
  readonly reason: string | null;
  /** What the tool's `redact` hook returned, parsed; absent when it has none. */
  readonly shown?: unknown;
  /** When approval was asked for, and when it counts as denied (server clock). */
  readonly requestedMs: number | null;
  readonly expiresMs: number | null;
  /** The lifetime the approval is for: the receipt's epoch, or after the start the one the approval named. */
  readonly epoch: string;
  /** The arguments' digest the approval is for (the receipt's). */
  readonly argsHash: string;
  /** `null` while it awaits a decision. */
  readonly decision: 'approved' | 'denied' | null;
  /** Who decided (`expiry` for an approval nobody gave in time). */
  readonly by: string | null;
  readonly note: string | null;
  /** Where the decision was made: `cli`, `console`, `code`, `worker` (an expiry). */
  readonly source: string | null;
  readonly decidedMs: number | null;
  /** `expired` when nobody decided in time. */
  readonly deniedReason: string | null;
  /** The BullMQ job parked while the call awaits (the one a decision promotes), when the gate recorded it. */
  readonly job?: AttemptJob;
}

export { RECEIPT_HISTORY_CAP, type ReceiptHistoryEntry, type ReceiptHistoryWhat } from './history.js';

/** Hash field prefix of a recorded sub-step: `step:<name>`. */
export const STEP_FIELD_PREFIX = 'step:';

/** Hash field prefix of the BullMQ job an attempt ran in: `job:<attempt>`. */
export const JOB_FIELD_PREFIX = 'job:';

/** Hash field prefix of a BullMQ job that met the call while it was ambiguous: `met_job:<job JSON>`. */
export const MET_JOB_FIELD_PREFIX = 'met_job:';

/** The BullMQ job an attempt ran in: enough to find it again with a `Queue`. */
export interface AttemptJob {
  /** The queue's name. */
  readonly queue: string;
  /** The queue's BullMQ key prefix (`bull` unless the worker set another). */
  readonly prefix: string;
  readonly id: string;
}

/** How a reconcile judged a lost attempt: its effect landed, never started, or nobody can tell. */
export type ReconcileVerdict = 'completed' | 'not_started' | 'unknown';

/** A reconcile's verdict as the receipt records it. */
export interface ReconcileRecord {
  readonly verdict: ReconcileVerdict;
  /** When it was recorded (server clock). */
  readonly atMs: number;
  /** Worker id of the reconciler. */
  readonly by: string;
  /** The attempt it judged. */
  readonly attempt: number;
  /** For `unknown`: why (the tool's answer, an error, or a timeout). */
  readonly note: string | null;
}

/** An {@link AttemptJob} as stored (`attemptJobText` in `transitions/claim.ts`), or `null` for a field that is not one. */
export function parseAttemptJob(text: string): AttemptJob | null {
  try {
    const v = JSON.parse(text) as Partial<AttemptJob>;
    if (typeof v.queue === 'string' && typeof v.prefix === 'string' && typeof v.id === 'string') {
      return { queue: v.queue, prefix: v.prefix, id: v.id };
    }
  } catch {
    // A hand-edited field is shown as absent rather than failing the whole read.
  }
  return null;
}

const VERDICTS: readonly string[] = ['completed', 'not_started', 'unknown'];

/** One receipt, as {@link ReceiptStore.inspect} and the listing methods return it. */
export interface ReceiptRecord {
  readonly key: ToolCallReceiptKey;
  /** The exact Redis key, for `redis-cli HGETALL`. */
  readonly redisKey: string;
  /**
   * Where the call stands. An approval state ({@link ApprovalStatus}) means
   * it has not run: `attempts` is 0 and there is no lease; see `approval`.
   */
  readonly status: ReceiptRecordStatus;
  readonly attempts: number;
  /**
   * The epoch of this lifetime of the receipt, minted by the claim that
   * created it (`''` for a receipt written before epochs existed). With
   * `attempts` it is the fence of the current attempt; an operator may pass
   * it to `resolve` as `epochSeen`.
   */
  readonly epoch: string;
  /** End of the current lease on the server clock; `null` once settled. */
  readonly leaseUntilMs: number | null;
  /** Whether the lease had run out by the server's `TIME` when this was read. `false` unless running. */
  readonly leaseExpired: boolean;
  /** Worker id of the current (or last) attempt. */
  readonly owner: string | null;
  /** The effect recorded by the first claim (`transactional`: settled from its PostgreSQL outcome row, never ambiguous). */
  readonly effect: ReceiptEffect;
  readonly createdMs: number;
  readonly updatedMs: number;
  /** When the receipt settled (completed, failed, or resolved by an operator). */
  readonly completedMs: number | null;
  /** Parsed result when completed; absent when there is none. */
  readonly result?: unknown;
  readonly error: string | null;
  readonly tier: string | null;
  /**
   * When a claim first found the current attempt ambiguous. Kept after a late
   * settle or a resolve, so the record shows the call was once ambiguous.
   */
  readonly ambiguousMs: number | null;
  /**
   * The last heartbeat of the current attempt after a claim reported it
   * ambiguous: the attempt is alive and the verdict is contested.
   */
  readonly lateHeartbeatMs: number | null;
  /**
   * Set when an attempt completed or failed after a claim had reported it
   * ambiguous: when, and which attempt. Kept across later attempts.
   */
  readonly lateSettle: { readonly atMs: number; readonly attempt: number } | null;
  /** When an operator resolved it, if one did. */
  readonly resolvedMs: number | null;
  /** Recorded sub-steps by name, values parsed. */
  readonly steps: Record<string, unknown>;
  /** When the current (or last) attempt started, server clock; `null` for receipts written before it was recorded. */
  readonly startedMs: number | null;
  /** The BullMQ job of each attempt that recorded one, by attempt, oldest first. */
  readonly jobs: ReadonlyArray<AttemptJob & { readonly attempt: number }>;
  /** Other BullMQ jobs that met the call while it was ambiguous (a duplicate of the turn, say). */
  readonly metJobs: readonly AttemptJob[];
  /** The last reconcile's verdict, if a reconcile answered. */
  readonly reconciled: ReconcileRecord | null;
  /** End of a reconcile lease in progress (server clock); `null` when none is held. */
  readonly reconcilingUntilMs: number | null;
  /** When a provider-keyed call was last re-run inside its window. */
  readonly keyedRerunMs: number | null;
  /**
   * The receipt's audit trail, oldest first: every operator verdict,
   * reconcile verdict and late settle of this lifetime, kept across later
   * attempts; the last {@link RECEIPT_HISTORY_CAP} of them. Empty for a
   * receipt written before the history existed.
   */
  readonly history: readonly ReceiptHistoryEntry[];
  /** History entries written but no longer kept (dropped past the cap, or unreadable). */
  readonly historyDropped: number;
  /**
   * The receipt's layout (its `schema` field; 1 for a receipt written before
   * layouts were numbered). Never above `RECEIPT_SCHEMA_VERSION`: a receipt
   * a newer release wrote is refused with `ReceiptVersionError`, not read.
   * Always set on a record read from Redis; optional so records built by
   * hand (tests, fixtures) need not name it.
   */
  readonly schema?: number;
  /**
   * The call's approval, when it needed one (awaiting, decided, or approved
   * and started since); `null` for a call that never did. Optional so
   * records built by hand need not name it.
   */
  readonly approval?: ReceiptApproval | null;
  /** Time to live in ms when read; -1 when the key has no TTL. */
  readonly ttlMs: number;
  /** Server time of the read, in ms. */
  readonly readAtMs: number;
}

function str(value: unknown): string {
  if (typeof value === 'string') return value;
  if (Buffer.isBuffer(value)) return value.toString('utf8');
  return String(value);
}

function optionalInt(fields: Map<string, string>, name: string): number | null {
  const raw = fields.get(name);
  if (raw === undefined || raw === '') return null;
  const n = Number(raw);
  return Number.isFinite(n) ? n : null;
}

/**
 * The layout a receipt's `schema` field names (1 when absent), as the scripts
 * read it (`lua/includes/observe-receipt.lua`): throws `ReceiptVersionError`
 * for one newer than this release's, `CorruptReceiptError` for a value that is
 * not a whole number >= 1.
 */
function schemaOf(redisKey: string, raw: string | undefined): number {
  if (raw === undefined) return 1;
  const version = /^\d+$/.test(raw) ? Number(raw) : 0;
  if (version < 1) throw new CorruptReceiptError(redisKey, 'schema is not a whole number >= 1');
  if (version > RECEIPT_SCHEMA_VERSION) throw new ReceiptVersionError(redisKey, version);
  return version;
}

/**
 * Parses the reply of `inspect-1.lua` (`{ now, pttl, field, value, … }`);
 * returns `null` when the receipt does not exist.
 */
export function parseInspectReply(redisKey: string, reply: unknown): ReceiptRecord | null {
  if (!Array.isArray(reply) || reply.length < 2 || reply.length % 2 !== 0) {
    throw new UnexpectedScriptReplyError('inspect', reply);
  }
  const nowMs = Number(reply[0]);
  const ttlMs = Number(reply[1]);
  if (ttlMs === -2 || reply.length === 2) return null;
  const fields = new Map<string, string>();
  for (let i = 2; i < reply.length; i += 2) fields.set(str(reply[i]), str(reply[i + 1]));

  // Before anything else of it: a newer layout may hold a state this release would call corrupt, or misread.
  const schema = schemaOf(redisKey, fields.get('schema'));
  const status = fields.get('status');
  if (status !== 'running' && status !== 'completed' && status !== 'failed' && !(status !== undefined && isApprovalStatus(status))) {
    throw new CorruptReceiptError(
      redisKey,
      status === undefined ? 'the hash has no status field' : 'status is not running, completed or failed, nor an approval state',
    );
  }
  const steps: Record<string, unknown> = {};
  const jobs: Array<AttemptJob & { attempt: number }> = [];
  const metJobs: AttemptJob[] = [];
  const history: ReceiptHistoryEntry[] = [];
  for (const [name, value] of fields) {
    if (name.startsWith(HISTORY_FIELD_PREFIX)) {
      const seq = Number(name.slice(HISTORY_FIELD_PREFIX.length));
      const entry = Number.isSafeInteger(seq) && seq >= 1 ? parseHistoryEntry(seq, value) : null;
      if (entry) history.push(entry);
    }
    if (name.startsWith(STEP_FIELD_PREFIX)) steps[name.slice(STEP_FIELD_PREFIX.length)] = fromStoredJson(value);
    if (name.startsWith(MET_JOB_FIELD_PREFIX)) {
      const job = parseAttemptJob(name.slice(MET_JOB_FIELD_PREFIX.length));
      if (job) metJobs.push(job);
    }
    if (name.startsWith(JOB_FIELD_PREFIX)) {
      const job = parseAttemptJob(value);
      const attempt = Number(name.slice(JOB_FIELD_PREFIX.length));
      if (job && Number.isSafeInteger(attempt)) jobs.push({ ...job, attempt });
    }
  }
  jobs.sort((a, b) => a.attempt - b.attempt);
  history.sort((a, b) => a.seq - b.seq);
  const historySeq = optionalInt(fields, HISTORY_SEQ_FIELD) ?? 0;
  const verdict = fields.get('reconciled') ?? '';
  const leaseUntilMs = optionalInt(fields, 'lease_until_ms');
  const resultText = storedResult(fields);
  const createdMs = optionalInt(fields, 'created_ms') ?? 0;
  const completedMs = optionalInt(fields, 'completed_ms');
  const attempts = optionalInt(fields, 'attempts') ?? 0;
  // The compact layout leaves out the times that repeat another: its first attempt started when it was
  // created (a later one writes started_ms), and it was last written when it settled or, before, at the
  // latest of its creation and any updated_ms a transition since wrote.
  const compact = schema === COMPACT_RECEIPT_SCHEMA;
  const storedUpdatedMs = optionalInt(fields, 'updated_ms') ?? 0;
  const updatedMs = compact ? Math.max(storedUpdatedMs, completedMs ?? 0, createdMs) : storedUpdatedMs;
  const startedMs = optionalInt(fields, 'started_ms') ?? (compact && attempts >= 1 ? createdMs : null);
  const lateSettleMs = optionalInt(fields, 'late_settle_ms');
  const key = receiptCallOf(redisKey, {
    tenant: fields.get('tenant'),
    run: fields.get('run'),
    tool: fields.get('tool'),
    args_hash: fields.get('args_hash'),
  });
  const record: ReceiptRecord = {
    key,
    redisKey,
    status,
    attempts,
    epoch: fields.get('epoch') ?? '',
    leaseUntilMs,
    leaseExpired: status === 'running' && (leaseUntilMs === null || leaseUntilMs <= nowMs),
    owner: fields.get('owner') ?? null,
    effect: effectOf(fields.get('effect')),
    createdMs,
    updatedMs,
    completedMs,
    error: fields.get('error') ?? null,
    tier: fields.get('tier') ?? null,
    ambiguousMs: optionalInt(fields, 'ambiguous_ms'),
    resolvedMs: optionalInt(fields, 'resolved_ms'),
    lateHeartbeatMs: optionalInt(fields, 'late_heartbeat_ms'),
    lateSettle: lateSettleMs === null ? null : { atMs: lateSettleMs, attempt: optionalInt(fields, 'late_settle_attempt') ?? 0 },
    steps,
    startedMs,
    jobs,
    metJobs,
    reconciled: VERDICTS.includes(verdict)
      ? {
          verdict: verdict as ReconcileVerdict,
          atMs: optionalInt(fields, 'reconciled_ms') ?? 0,
          by: fields.get('reconciled_by') ?? '',
          attempt: optionalInt(fields, 'reconciled_attempt') ?? 0,
          note: fields.get('reconcile_note') ?? null,
        }
      : null,
    reconcilingUntilMs: optionalInt(fields, 'reconciling_until_ms'),
    keyedRerunMs: optionalInt(fields, 'keyed_rerun_ms'),
    history,
    historyDropped: Math.max(0, historySeq - history.length),
    approval: approvalOf(fields, status, key.argsHash),
    schema,
    ttlMs,
    readAtMs: nowMs,
  };
  return resultText === undefined ? record : { ...record, result: fromStoredJson(resultText) };
}

/** The most parts the compact layout keeps a result in (RESULT_MAX_PARTS, lua/includes/observe-receipt.lua). */
const RESULT_MAX_PARTS = 32;

/**
 * A receipt's stored result text: its `result` field, followed by the parts
 * `result.2` … `result.<n>` when `result_parts` says the compact layout kept
 * it in n parts (`lua/includes/settle.lua`); `undefined` when there is none.
 */
function storedResult(fields: ReadonlyMap<string, string>): string | undefined {
  const first = fields.get('result');
  const parts = Number(fields.get('result_parts') ?? 0);
  // No more parts than a settle writes (32): a hand-edited count must not make a read loop on.
  if (first === undefined || !Number.isSafeInteger(parts) || parts < 2 || parts > RESULT_MAX_PARTS) return first;
  let text = first;
  for (let i = 2; i <= parts; i++) text += fields.get(`result.${i}`) ?? '';
  return text;
}

/** A receipt's recorded effect; anything but the known ones reads as opaque, the conservative one. */
const effectOf = (text: string | undefined): ReceiptEffect => (text === 'resumable' || text === 'transactional' ? text : 'opaque');

/** The approval fields of a receipt (`lua/includes/approval.lua`), or `null` for a call that never needed approval. */
function approvalOf(fields: Map<string, string>, status: ReceiptRecordStatus, argsHash: string): ReceiptApproval | null {
  const requestedMs = optionalInt(fields, 'approval_requested_ms');
  if (requestedMs === null && !isApprovalStatus(status)) return null;
  const decision = fields.get('approval_decision');
  const shownText = fields.get('approval_shown');
  const approval: ReceiptApproval = {
    reason: fields.get('approval_reason') || null,
    requestedMs,
    expiresMs: optionalInt(fields, 'approval_expires_ms'),
    epoch: fields.get('approval_epoch') ?? fields.get('epoch') ?? '',
    argsHash,
    decision: decision === 'approved' || decision === 'denied' ? decision : null,
    by: fields.get('approval_by') ?? null,
    note: fields.get('approval_note') || null,
    source: fields.get('approval_source') ?? null,
    decidedMs: optionalInt(fields, 'approval_decided_ms'),
    deniedReason: fields.get('approval_denied_reason') || null,
  };
  const jobText = fields.get('approval_job');
  const job = jobText === undefined ? null : parseAttemptJob(jobText);
  return {
    ...approval,
    ...(shownText === undefined ? {} : { shown: fromStoredJson(shownText) }),
    ...(job === null ? {} : { job }),
  };
}

/**
 * True when a read receipt is ambiguous: running, either a claim reported
 * the attempt ambiguous (the verdict sticks, even while a late heartbeat
 * keeps the lease live: see {@link isContestedRecord}) or its lease is
 * expired by the server clock and its effect is opaque, and no reconcile is
 * under way (a live reconcile lease means a worker is settling it right now,
 * so no person is needed yet).
 */
export function isAmbiguousRecord(record: ReceiptRecord): boolean {
  return (
    record.status === 'running' &&
    (record.ambiguousMs !== null || (record.leaseExpired && record.effect === 'opaque')) &&
    !(record.reconcilingUntilMs !== null && record.reconcilingUntilMs > record.readAtMs)
  );
}

/**
 * True when a receipt reported ambiguous has a live lease again: its attempt
 * heartbeated after the verdict and may still settle late. An operator
 * cannot resolve it until that happens or the lease lapses.
 */
export function isContestedRecord(record: ReceiptRecord): boolean {
  return record.status === 'running' && record.ambiguousMs !== null && !record.leaseExpired;
}
