/**
 * The shapes a tool call runs with: the wrapper's collaborators shared by
 * every call, the job a call belongs to, and what preparing a call's input
 * gives. Types only, so every module of the call path can name them without
 * importing the code that runs calls.
 */
import type { Job } from 'bullmq';
import type { DigestFn } from '../core/identity.js';
import type { ReceiptsKeyspace } from '../redis/receipts/keyspace.js';
import type { AnyToolDefinition } from './define-tool.js';
import type { ToolCall, ToolJobData, ToolResultBlock } from '../core/job-data.js';
import type { CallFactsSource } from './observer.js';
import type { WorkerLimits } from '../limits/call-limits.js';
import type { ApprovalGate } from '../approvals/gate.js';
import type { ApprovalRule } from '../approvals/types.js';

/** What a receipt stores as a call's result, and what a replay returns. */
export interface RecordedToolResult {
  readonly content: string;
  readonly is_error?: true;
}

/** The input a call will run with, or why it will not run. */
export type PreparedCall =
  | { readonly ok: true; readonly rawInput: unknown; readonly args: unknown }
  | { readonly ok: false; readonly message: string; readonly countsAsRejection: boolean };

/** The approval of a tool, its own options over the worker's (see approval-step.ts). */
export interface ToolApproval {
  readonly rule: ApprovalRule;
  readonly redact: ((args: unknown) => unknown) | undefined;
  readonly timeoutMs: number;
}

/** The worker's approvals: its gate, and the approval each of its tools runs with. */
export interface ApprovalRuntime {
  readonly gate: ApprovalGate;
  /** The tool's approval, `undefined` when it has no rule (then it passes no gate). */
  of(tool: AnyToolDefinition): ToolApproval | undefined;
}

/** The wrapper's fixed collaborators, shared by every call. */
export interface CallRuntime {
  /**
   * The receipts keyspace, made once per processor: its parts (receipts,
   * reconciles, breaker) share one channel, and its frozen settings are the
   * only copy of the lease, the owner and the durability.
   */
  readonly keyspace: ReceiptsKeyspace;
  readonly tools: ReadonlyMap<string, AnyToolDefinition>;
  /** Where each call's facts go: the log, the events and the user's telemetry, subscribed once per processor. */
  readonly facts: CallFactsSource;
  readonly digest: DigestFn;
  readonly waitJitterMs: number;
  readonly maxWaitMs: number;
  readonly onAmbiguous: 'fail' | 'report';
  /** The gate of tools that need approval; `undefined` when no tool does. */
  readonly approvals?: ApprovalRuntime;
  /** Whether a tool runs without a receipt: read-only, and not made destructive by the deployment. */
  runsWithoutReceipt(tool: AnyToolDefinition): boolean;
  /** Validates (and where provable, repairs) a call's input before anything is claimed. */
  prepare(call: ToolCall, tool: AnyToolDefinition, abort: { readonly signal: AbortSignal }): Promise<PreparedCall>;
  /** Turns a tool's return value into what the model sees (and the receipt stores). */
  shape(value: unknown, call: ToolCall, tool: AnyToolDefinition, data: ToolJobData): Promise<RecordedToolResult>;
  /** The worker's limits; `undefined` when it has none. */
  readonly limits?: WorkerLimits;
}

/**
 * A job's or an attempt's abort, as the path reads it: `aborted` and
 * `reason` without making anything, `signal` made on first read (see
 * `LazyAbort` in run-call.ts).
 */
export interface CallAbort {
  readonly aborted: boolean;
  readonly reason: unknown;
  readonly signal: AbortSignal;
  throwIfAborted(): void;
}

/** The job a call belongs to. */
export interface JobScope {
  readonly job: Job;
  readonly token: string | undefined;
  readonly data: ToolJobData;
  /** Aborted when BullMQ cancels the job or its lock cannot be renewed. */
  readonly abort: CallAbort;
  /** The results of the turn's calls that ended so far, in call order (a parked turn's progress note shows them). */
  readonly answered?: readonly ToolResultBlock[];
  /**
   * Park the job until `serverNowMs + delayMs` on the Redis server's clock
   * (a call waits for a live attempt). Calls running side by side defer it
   * until all of them have ended.
   */
  park(serverNowMs: number, delayMs: number): Promise<void>;
}
