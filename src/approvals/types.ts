/**
 * The shapes of approvals: what a call that waits for a person looks like,
 * what a decision records, what deciding takes, and how a tool says it needs
 * approval. Types only.
 */
import type { Queue } from 'bullmq';
import type { RedisConnection } from '../redis/connection/connection.js';
import type { DurabilityOptions } from '../redis/durability/durability.js';

/** A call waiting for a person to approve or deny it. */
export interface PendingApproval {
  /** The receipt's Redis key: what `approveCall` and `denyCall` name. */
  readonly receiptKey: string;
  readonly tenantId: string;
  readonly runId: string;
  readonly toolName: string;
  /** The arguments' digest: a decision must name it. */
  readonly argsHash: string;
  /** The receipt's lifetime: a decision must name it. */
  readonly epoch: string;
  /** Why the call needs approval, as the tool's rule said. */
  readonly reason?: string;
  /**
   * What the tool's `redact(args)` hook returned, for the approver to see.
   * Absent when the tool has no such hook: the arguments are never copied
   * into the receipt, and the approver reads them from the BullMQ job.
   */
  readonly shown?: unknown;
  /** When approval was asked for (ms, Redis server clock). */
  readonly requestedAtMs: number;
  /** When it counts as denied if nobody decides (ms, server clock). */
  readonly expiresAtMs: number;
  /** The BullMQ job parked on the call, when known. */
  readonly jobId?: string;
  /** That job's queue and BullMQ prefix too, to read its arguments or promote it (`jobId` is its `id`). */
  readonly job?: { readonly queue: string; readonly prefix: string; readonly id: string };
}

/** A decision on a call, as recorded on its receipt. */
export interface ApprovalDecided {
  readonly receiptKey: string;
  readonly decision: 'approved' | 'denied';
  /** Who decided; `expiry` for an approval nobody gave in time. */
  readonly actor: string;
  readonly note?: string;
  /** When (ms, server clock). */
  readonly atMs: number;
}

/** What approving or denying a call takes. */
export interface DecideApprovalInput {
  /** The receipts' connection (the one the workers write receipts through). */
  readonly redis: RedisConnection;
  /** Key prefix of the receipts; default `trc`. */
  readonly prefix?: string;
  readonly receiptKey: string;
  /** The lifetime decided on, as {@link PendingApproval.epoch} gave it. */
  readonly epoch: string;
  /** The arguments decided on, as {@link PendingApproval.argsHash} gave it. */
  readonly argsHash: string;
  /** Who decides: kept on the receipt and in the audit log. At most 200 characters. */
  readonly actor: string;
  /** Why; the model reads it after a denial. At most 1000 characters. */
  readonly note?: string;
  /** Where the decision was made; default `code`. */
  readonly source?: 'cli' | 'console' | 'code';
  /**
   * The BullMQ queue of the parked job, to promote it through. Optional:
   * without it the job is promoted through the queue the pending approval
   * recorded (its name and BullMQ prefix), opened on `redis`, which works
   * whenever the queue lives on the receipts' Redis. Either way the job then
   * runs at once; if it cannot be promoted (its queue on another Redis, or
   * on PostgreSQL, and no `queue` given) it wakes when the approval would
   * have expired.
   */
  readonly queue?: Queue;
  /** How long a denied receipt is kept (ms); default 24 h, as the workers'. */
  readonly retentionMs?: number;
  /**
   * The workers' `durability`: the decision is then acknowledged only once
   * the replicas (or the AOF) have it, as the workers' receipts are, so a
   * failover cannot forget it (a denial coming back pending); refused as
   * `durability.not_acknowledged` otherwise. Off by default.
   */
  readonly durability?: DurabilityOptions;
  /** The deadline of each command, as the workers' `commandTimeoutMs`; default 5,000 ms. */
  readonly commandTimeoutMs?: number;
}

/** The context an approval rule is asked in. */
export interface ApprovalContext {
  readonly tenantId: string;
  readonly runId: string;
  readonly toolName: string;
  /** The model's tool_use id. */
  readonly callId: string;
}

/**
 * Whether a call needs a person's approval before it runs: `'always'`, or a
 * function of the parsed arguments answering `true`, `false`, or
 * `{ reason }` (needed, with a reason shown to the approver).
 */
export type ApprovalRule = 'always' | ((args: unknown, ctx: ApprovalContext) => boolean | { readonly reason: string });

/** The approval options a tool (or `withToolReceipts`, for all its tools) takes. */
export interface ApprovalOptions {
  readonly approval?: ApprovalRule;
  /** What an approver is shown instead of the arguments (JSON-serializable); nothing is shown without it. */
  readonly redact?: (args: unknown) => unknown;
  /** How long a call may wait for a decision before it counts as denied (`expired`). Default 24 h. */
  readonly approvalTimeoutMs?: number;
}
