/**
 * The shapes a tool call runs with: the wrapper's collaborators shared by
 * every call, the job a call belongs to, what preparing a call's input
 * gives, and an attempt as its outcome branches read it. Types only, so
 * every module of the call path can name them without importing the code
 * that runs calls.
 */
import type { Job } from 'bullmq';
import type { DigestFn, ToolCallReceiptKey } from '../core/identity.js';
import type { AttemptFence } from '../redis/errors.js';
import type { AttemptJob } from '../redis/receipts/reads/record.js';
import type { ClaimOptions, PrefetchedClaim } from '../redis/receipts/store.js';
import type { ReceiptsKeyspace } from '../redis/receipts/keyspace.js';
import type { AnyToolDefinition } from './tools/define-tool.js';
import type { ToolCall, ToolJobData, ToolResultBlock } from '../core/job-data.js';
import type { CallFacts, CallFactsSource } from './call/facts.js';
import type { LimitedCall, WorkerLimits } from '../limits/call-limits.js';
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

/** The approval of a tool, its own options over the worker's (see outcomes/approval.ts). */
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
  prepare(call: ToolCall, tool: AnyToolDefinition, abort: { readonly signal: AbortSignal }): PreparedCall | Promise<PreparedCall>;
  /** Turns a tool's return value into what the model sees (and the receipt stores); a promise only when it must wait. */
  shape(value: unknown, call: ToolCall, tool: AnyToolDefinition, data: ToolJobData): RecordedToolResult | Promise<RecordedToolResult>;
  /** The worker's limits; `undefined` when it has none. */
  readonly limits?: WorkerLimits;
  /**
   * The options a call of `tool` is claimed with, in `scope`'s job: its
   * effect and whether it settles its own expired attempts, worked out once
   * per tool when the processor is made; the lease and owner are the
   * keyspace's. `needsApproval`: the call's approval gate asked a person
   * about it (see `ClaimOptions.needsApproval`).
   */
  claimOptions(tool: AnyToolDefinition, scope: JobScope, needsApproval?: boolean): ClaimOptions;
}

/**
 * A job's or an attempt's abort, as the path reads it: `aborted` and
 * `reason` without making anything, `signal` made on first read (see
 * `LazyAbort` in call/execution.ts).
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
  /** The BullMQ job a claim records for the attempt it starts, worked out once per job (`undefined` without an id). */
  readonly attemptJob: AttemptJob | undefined;
  /**
   * Park the job until `serverNowMs + delayMs` on the Redis server's clock
   * (a call waits for a live attempt). Calls running side by side defer it
   * until all of them have ended. `comeBack`, asked once the job is parked,
   * answers whether what it waits for happened meanwhile (a person decided
   * before the job was in the delayed set, where the decision looks for it
   * to promote it): then the job is promoted to run again once this
   * delivery has unwound (a quarter second, `PARKED_DELIVERY_UNWIND_MS`,
   * also the shortest park). A job cancelled, or whose lock was lost, is not
   * parked: this throws its interruption instead.
   */
  park(serverNowMs: number, delayMs: number, comeBack?: () => Promise<boolean>): Promise<void>;
}

/**
 * The call after the current one in a sequential stretch of a turn, as the
 * current call's complete sees it: a claim to carry in the same script, and
 * where its answer goes (see `NextCall` in turn/claims-ahead.ts).
 */
export interface CarriedCall {
  claimToCarry(): { readonly key: ToolCallReceiptKey; readonly options: ClaimOptions } | undefined;
  carried(ahead: PrefetchedClaim | null): void;
}

/** A call staged to claim: its tool, its arguments and its receipt key, as the branches before its claim read it. */
export interface ReadyCall {
  readonly runtime: CallRuntime;
  readonly scope: JobScope;
  readonly call: ToolCall;
  readonly tool: AnyToolDefinition;
  readonly key: ToolCallReceiptKey;
  readonly args: unknown;
  /** Where the call's facts go: its log lines, its events and the user's telemetry. */
  readonly facts: CallFacts;
}

/** One attempt a claim started, as an execution's outcome branches read it (the call run is one). */
export interface CallAttempt extends ReadyCall {
  /** The attempt's fence, carried by every write; `attempt` is its number, for logs and events. */
  readonly fence: AttemptFence;
  readonly attempt: number;
  /** This attempt followed another whose tool reported an unknown outcome in this delivery. */
  readonly afterUnknownOutcome: boolean;
  /** The call after this one, which the complete may claim in the same script. */
  readonly next: CarriedCall | undefined;
  /** The call's shares of its limits, bound to this attempt; given back when it is settled as never started. */
  readonly limited: LimitedCall | undefined;
  /** Claims the call again at once, in this delivery: a tool that settles an unknown outcome itself is asked now. */
  claimAgain(): Promise<ToolResultBlock>;
}
