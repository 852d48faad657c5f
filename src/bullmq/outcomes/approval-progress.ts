/**
 * What a job parked for approval tells the agent's side: its BullMQ progress
 * names the calls awaiting a person, so a client can tell that wait from any
 * other delay (`/client`'s `submit` with `approvals: 'return'`). The receipt
 * stays the truth; this is a note on the job, cleared as each call is decided.
 */
import type { Job } from 'bullmq';
import type { ToolResultBlock } from '../../core/job-data.js';

/** The key of the job's progress object under which the awaiting calls are listed. */
export const AWAITING_APPROVAL_PROGRESS = 'toolReceiptsAwaitingApproval';

/**
 * The key under which the same progress object keeps the results of the
 * turn's calls that ended before it was parked: they ran, so an agent shown
 * the parked turn can have them at once.
 */
export const ANSWERED_BEFORE_APPROVAL_PROGRESS = 'toolReceiptsAnswered';

/** One call of the job awaiting approval, as its progress lists it. */
export interface AwaitingApprovalCall {
  /** The model's tool_use id. */
  readonly tool_use_id: string;
  readonly tool: string;
  /** What `approveCall` / `denyCall` (and the CLI, the console) name. */
  readonly receiptKey: string;
  readonly reason?: string;
  /** When it counts as denied if nobody decides (ms, Redis server clock). */
  readonly expiresAtMs: number;
}

/** The awaiting calls a job's progress lists; empty for any other progress. */
export function awaitingApprovalOf(progress: unknown): AwaitingApprovalCall[] {
  const listed = (progress as Record<string, unknown> | null | undefined)?.[AWAITING_APPROVAL_PROGRESS];
  if (!Array.isArray(listed)) return [];
  return listed.filter(
    (c): c is AwaitingApprovalCall =>
      typeof c === 'object' && c !== null && typeof c.tool_use_id === 'string' && typeof c.receiptKey === 'string',
  );
}

/** The results a job's progress keeps of the calls that ended before it was parked; empty when none. */
export function answeredBeforeApprovalOf(progress: unknown): ToolResultBlock[] {
  const kept = (progress as Record<string, unknown> | null | undefined)?.[ANSWERED_BEFORE_APPROVAL_PROGRESS];
  if (!Array.isArray(kept)) return [];
  return kept.filter(
    (b): b is ToolResultBlock =>
      typeof b === 'object' &&
      b !== null &&
      typeof b.tool_use_id === 'string' &&
      typeof b.content === 'string' &&
      typeof b.outcome === 'string',
  );
}

/**
 * Lists `call` on the job's progress (replacing an older entry of the same
 * call), with `answered`, the results of the turn's calls that ended so far.
 */
export async function noteAwaitingApproval(job: Job, call: AwaitingApprovalCall, answered: readonly ToolResultBlock[] = []): Promise<void> {
  const others = awaitingApprovalOf(job.progress).filter((c) => c.tool_use_id !== call.tool_use_id);
  await job.updateProgress({ [AWAITING_APPROVAL_PROGRESS]: [...others, call], [ANSWERED_BEFORE_APPROVAL_PROGRESS]: [...answered] });
}

/** Takes the call off the job's progress once it is decided; nothing is written when it was not listed. */
export async function clearAwaitingApproval(job: Job, toolUseId: string): Promise<void> {
  const listed = awaitingApprovalOf(job.progress);
  if (!listed.some((c) => c.tool_use_id === toolUseId)) return;
  await job.updateProgress({ [AWAITING_APPROVAL_PROGRESS]: listed.filter((c) => c.tool_use_id !== toolUseId) });
}
