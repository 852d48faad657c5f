/**
 * How a tool failure is classified for retries, the breaker and the model.
 */
import { ToolReceiptsError } from './errors.js';

/**
 * How a tool failure is classified for retries and for the model.
 *
 * - `destructive`: a destructive operation had started when it failed. The
 *   world may be half-changed, so the tool is removed for the run at once.
 * - `neverStarted`: the tool proved nothing ran (validation, a refused
 *   precondition), so running it again is safe.
 * - `idempotent`: the tool declares that repeating it is harmless.
 * - `neutral`: none of the above is known.
 */
export type FailureTier = 'destructive' | 'neverStarted' | 'idempotent' | 'neutral';

/** Failures of one tool in one run after which it is removed (a circuit breaker against retry spirals). */
export const MAX_TOOL_FAILURES = 5;

/**
 * Consecutive rejections of one tool in one run after which it is removed.
 * A successful call resets the streak, so an occasional rejection during
 * otherwise good work never removes the tool.
 */
export const MAX_TOOL_REJECTIONS = 5;

/** Appended to a rejected call's message for the model. */
export const REJECTION_SUFFIX = 'This call was refused and was not run; repeating it with the same arguments will be refused again.';

/** The message a call gets once its tool has been removed for the run. */
export const REJECTION_REMOVAL_SUFFIX =
  'This tool has been removed for the rest of this run after repeated failures or refusals; do not call it again.';

/**
 * Classify a failure. The most specific fact wins: a destructive operation
 * that started, then proof that nothing started, then the tool's own
 * idempotent declaration, else neutral.
 */
export function failureTier(
  facts: { destructiveRan?: boolean; neverStarted?: boolean },
  markers: { idempotent?: boolean } = {},
): FailureTier {
  if (facts.destructiveRan) return 'destructive';
  if (facts.neverStarted) return 'neverStarted';
  if (markers.idempotent) return 'idempotent';
  return 'neutral';
}

/** What the model is told after each tier's failure message. */
export const TIER_SUFFIX: Readonly<Record<FailureTier, string>> = Object.freeze({
  destructive:
    'A destructive operation had already started when this failed, so its effects may be partial. The tool is now removed for this run; tell the user what happened instead of retrying.',
  neverStarted: 'Nothing was run, so it is safe to correct the arguments and call the tool again.',
  idempotent: 'The tool is idempotent, so calling it again with the same arguments is safe.',
  neutral: 'It is unknown whether anything changed; check the current state before calling the tool again.',
});

/**
 * Thrown by a tool to prove that nothing ran: the failure is safe to retry.
 * Classified as the `neverStarted` tier.
 *
 * With `unreachable: true` the tool also says why: the service it calls could
 * not be reached (no connection, or the server no longer knew the session),
 * so the request never got there. That is the infrastructure's failure, not
 * the tool's: the run's circuit breaker does not count it, and the job
 * retries as for any call that never started.
 */
export class NeverStartedError extends ToolReceiptsError {
  readonly code = 'tool.never_started';
  /** The service the tool calls could not be reached: not counted by the breaker. */
  readonly unreachable: boolean;

  constructor(message: string, options?: { cause?: unknown; unreachable?: boolean }) {
    super(message, options);
    this.unreachable = options?.unreachable === true;
  }
}

/** Whether `error` is a {@link NeverStartedError} whose service could not be reached (not the tool's failure). */
export const isUnreachableService = (error: unknown): boolean => error instanceof NeverStartedError && error.unreachable;

/**
 * Thrown by a tool when a destructive operation had started before it failed.
 * Classified as the `destructive` tier: the tool is removed for the run and the
 * job fails without retrying.
 */
export class DestructiveRanError extends ToolReceiptsError {
  readonly code = 'tool.destructive_ran';
}

/**
 * Thrown by a tool that refuses the call as asked (a record that is not
 * there, or not the caller's to read). Nothing ran, and asking again the same
 * way gets the same answer: the model gets the message as an error result,
 * and the job is not retried for it. Classified as the `neverStarted` tier.
 * The run's circuit breaker counts it as a rejection, not a failure:
 * `MAX_TOOL_REJECTIONS` in a row remove the tool, and a successful call of
 * the tool in between starts the count again.
 */
export class ToolRefusedError extends ToolReceiptsError {
  readonly code = 'tool.refused';
}

/** Read the tier facts off whatever a tool threw. */
export function failureFactsOf(error: unknown): { destructiveRan: boolean; neverStarted: boolean } {
  return {
    destructiveRan: error instanceof DestructiveRanError,
    neverStarted: error instanceof NeverStartedError || error instanceof ToolRefusedError,
  };
}

/**
 * Whether a failed call may be run again automatically (its BullMQ job
 * retried): only when the failure proves nothing ran, or the tool is
 * idempotent. Any other failure leaves the outcome unknown, so the model gets
 * the error and decides; a refusal is never retried, since it would be
 * refused again.
 */
export function retriesAutomatically(tier: FailureTier, error: unknown): boolean {
  if (error instanceof ToolRefusedError) return false;
  return tier === 'neverStarted' || tier === 'idempotent';
}

/**
 * Thrown by a tool that cannot tell whether its effect landed (a provider
 * timed out after the request was sent, say). The call is then treated like
 * an attempt that crashed mid-effect: never run again blindly, reported as
 * ambiguous until something settles it.
 */
export class OutcomeUnknownError extends ToolReceiptsError {
  readonly code = 'tool.outcome_unknown';
}
