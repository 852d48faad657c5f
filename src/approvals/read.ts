/** Reading approvals back: one receipt's approval state, and the calls awaiting approval under a prefix. */
import { receiptsConnection, type RedisConnection } from '../redis/connection/connection.js';
import { DEFAULT_KEY_PREFIX } from '../redis/keys.js';
import { receiptCallOf } from '../redis/key-parts.js';
import { ReceiptsChannel } from '../redis/receipts/channel.js';
import { keyspaceSettings } from '../redis/settings.js';
import { approvalScriptKeys, pendingApprovalsRedisKey } from './keys.js';
import type { ApprovalDecided, PendingApproval } from './types.js';

/** A decided approval as {@link readApproval} gives it: the decision, and the receipt's status now. */
export type DecidedApproval = ApprovalDecided & {
  /** `approved` (not started yet), `denied`, or the status of the call that ran after its approval. */
  readonly status: string;
};

const FIELDS = [
  'status',
  'tenant',
  'run',
  'tool',
  'args_hash',
  'epoch',
  'approval_reason',
  'approval_shown',
  'approval_requested_ms',
  'approval_expires_ms',
  'approval_job',
  'approval_decision',
  'approval_by',
  'approval_note',
  'approval_decided_ms',
  'approval_epoch',
] as const;

type Fields = Partial<Record<(typeof FIELDS)[number], string>>;

async function readFields(redis: RedisConnection, receiptKey: string): Promise<Fields> {
  const values = (await receiptsConnection(redis).command('HMGET', [receiptKey, ...FIELDS], receiptKey)) as (string | null)[];
  const fields: Fields = {};
  FIELDS.forEach((name, i) => {
    const v = values[i];
    if (v !== null && v !== undefined) fields[name] = String(v);
  });
  return fields;
}

function parseShown(text: string | undefined): { shown?: unknown } {
  if (text === undefined) return {};
  try {
    return { shown: JSON.parse(text) as unknown };
  } catch {
    return {};
  }
}

/** The job an approval records (`approval_job`, JSON `{"queue","prefix","id"}`): its id, and where it lives when that is recorded too. */
export function jobIdOf(text: string | undefined): Pick<PendingApproval, 'jobId' | 'job'> {
  if (text === undefined) return {};
  try {
    const { id, queue, prefix } = JSON.parse(text) as { id?: unknown; queue?: unknown; prefix?: unknown };
    if (typeof id !== 'string') return {};
    return { jobId: id, ...(typeof queue === 'string' && typeof prefix === 'string' ? { job: { queue, prefix, id } } : {}) };
  } catch {
    return {};
  }
}

function pendingOf(receiptKey: string, f: Fields): PendingApproval {
  return {
    receiptKey,
    // A layout-4 receipt stores none of the call's names: its key holds them.
    ...receiptCallOf(receiptKey, f),
    epoch: f.epoch ?? '',
    ...(f.approval_reason ? { reason: f.approval_reason } : {}),
    ...parseShown(f.approval_shown),
    requestedAtMs: Number(f.approval_requested_ms ?? 0),
    expiresAtMs: Number(f.approval_expires_ms ?? 0),
    ...jobIdOf(f.approval_job),
  };
}

/**
 * One receipt's approval: the {@link PendingApproval} while it awaits a
 * decision, the decision with the receipt's status once decided, or
 * `undefined` when the receipt does not exist or never needed approval. An
 * awaiting approval past its expiry reads as denied by `expiry` (the next
 * delivery of its job writes that down).
 */
export async function readApproval(opts: {
  readonly redis: RedisConnection;
  readonly prefix?: string;
  readonly receiptKey: string;
}): Promise<PendingApproval | DecidedApproval | undefined> {
  approvalScriptKeys(opts.prefix ?? DEFAULT_KEY_PREFIX, opts.receiptKey);
  const f = await readFields(opts.redis, opts.receiptKey);
  if (f.status === 'awaiting_approval') {
    const pending = pendingOf(opts.receiptKey, f);
    const now = await serverNowMs(opts.redis, opts.receiptKey);
    if (now < pending.expiresAtMs) return pending;
    return { receiptKey: opts.receiptKey, decision: 'denied', actor: 'expiry', atMs: pending.expiresAtMs, status: 'denied' };
  }
  if (f.approval_decision !== 'approved' && f.approval_decision !== 'denied') return undefined;
  return {
    receiptKey: opts.receiptKey,
    decision: f.approval_decision,
    actor: f.approval_by ?? '',
    ...(f.approval_note ? { note: f.approval_note } : {}),
    atMs: Number(f.approval_decided_ms ?? 0),
    status: f.status ?? '',
  };
}

async function serverNowMs(redis: RedisConnection, routeKey: string): Promise<number> {
  const [seconds, micros] = (await receiptsConnection(redis).command('TIME', [], routeKey)) as [string, string];
  return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
}

/** The index's pending entries, soonest to expire first, as a walk hands them on. */
interface PendingWalk {
  /** Server time the walk pruned expired entries at. */
  readonly nowMs: number;
  /** False when it stopped at `maxEntries` (or `visit` said stop) with entries left unread. */
  readonly complete: boolean;
}

/**
 * Walks the prefix's index: drops expired entries (their receipts are denied,
 * or will be at their job's next delivery) and entries whose receipt no
 * longer awaits approval (decided, gone), and hands every other one to
 * `visit` until it answers false, or `maxEntries` entries have been read.
 * One page of receipts is read at a time, its reads sent together.
 */
async function walkPending(
  redis: RedisConnection,
  prefix: string,
  maxEntries: number,
  visit: (pending: PendingApproval) => boolean,
): Promise<PendingWalk> {
  const index = pendingApprovalsRedisKey(prefix);
  // The walk drops what it finds stale from the index: writes, so through a channel as every write is.
  const channel = new ReceiptsChannel(redis, keyspaceSettings({ prefix }), 'listPendingApprovals');
  const connection = channel.redis;
  const nowMs = await serverNowMs(redis, index);
  await channel.command('ZREMRANGEBYSCORE', [index, '-inf', nowMs], index);
  const page = 200;
  let read = 0;
  for (let offset = 0; ;) {
    const size = Math.min(page, maxEntries - read);
    if (size <= 0) return { nowMs, complete: Number(await connection.command('ZCARD', [index], index)) <= offset };
    const keys = ((await connection.command('ZRANGE', [index, offset, offset + size - 1], index)) as unknown[]).map(String);
    if (keys.length === 0) return { nowMs, complete: true };
    read += keys.length;
    const fields = await Promise.all(keys.map((receiptKey) => readFields(redis, receiptKey)));
    let kept = 0;
    for (const [i, receiptKey] of keys.entries()) {
      const f = fields[i] ?? {};
      if (f.status !== 'awaiting_approval') {
        await channel.command('ZREM', [index, receiptKey], index);
        continue;
      }
      kept++;
      if (!visit(pendingOf(receiptKey, f))) return { nowMs, complete: false };
    }
    // The entries removed are gone from the index: the next page starts after the ones kept.
    offset += kept;
  }
}

/**
 * The calls awaiting approval under a prefix, soonest to expire first, from
 * the prefix's index (see `pendingApprovalsRedisKey`), of one tenant when
 * `tenantId` is given, at most `limit` (default 100). Entries whose receipt
 * no longer awaits approval, or has expired, are dropped from the index as
 * they are met.
 */
export async function listPendingApprovals(opts: {
  readonly redis: RedisConnection;
  readonly prefix?: string;
  readonly tenantId?: string;
  readonly limit?: number;
}): Promise<PendingApproval[]> {
  const limit = opts.limit ?? 100;
  const found: PendingApproval[] = [];
  if (limit <= 0) return found;
  await walkPending(opts.redis, opts.prefix ?? DEFAULT_KEY_PREFIX, Number.POSITIVE_INFINITY, (pending) => {
    if (opts.tenantId === undefined || pending.tenantId === opts.tenantId) found.push(pending);
    return found.length < limit;
  });
  return found;
}

/** How many calls await approval, as {@link countPendingApprovals} counts them. */
export interface PendingApprovalCount {
  /** Calls awaiting approval and not expired (of the tenant, when one was asked about). */
  readonly count: number;
  /** The same, by tenant (only the tenant asked about, when one was). */
  readonly byTenant: Readonly<Record<string, number>>;
  /** When the soonest of them counts as denied (server clock); `null` when none awaits. */
  readonly soonestExpiresAtMs: number | null;
  /**
   * False when the index held more entries than the count reads (`limit`):
   * the figures are then a lower bound.
   */
  readonly complete: boolean;
  /** Server time of the count, in ms. */
  readonly readAtMs: number;
}

/** Index entries {@link countPendingApprovals} reads at most, by default. */
export const PENDING_COUNT_LIMIT = 10_000;

/**
 * Counts the calls awaiting approval under a prefix (of one tenant, when
 * `tenantId` is given) from the prefix's index, dropping expired and stale
 * entries as {@link listPendingApprovals} does. Reads at most `limit` index
 * entries (default {@link PENDING_COUNT_LIMIT}); past that `complete` is
 * false and the count is a lower bound.
 */
export async function countPendingApprovals(opts: {
  readonly redis: RedisConnection;
  readonly prefix?: string;
  readonly tenantId?: string;
  readonly limit?: number;
}): Promise<PendingApprovalCount> {
  const byTenant: Record<string, number> = {};
  let count = 0;
  let soonest: number | null = null;
  const walk = await walkPending(opts.redis, opts.prefix ?? DEFAULT_KEY_PREFIX, opts.limit ?? PENDING_COUNT_LIMIT, (pending) => {
    if (opts.tenantId !== undefined && pending.tenantId !== opts.tenantId) return true;
    count++;
    byTenant[pending.tenantId] = (byTenant[pending.tenantId] ?? 0) + 1;
    // Soonest first: the first one counted expires soonest.
    soonest ??= pending.expiresAtMs;
    return true;
  });
  return { count, byTenant, soonestExpiresAtMs: soonest, complete: walk.complete, readAtMs: walk.nowMs };
}
