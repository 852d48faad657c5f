/**
 * Failures that are not the tool's: Redis not answering (`redis.timeout`,
 * `redis.unavailable`) or a receipt write the replicas did not acknowledge
 * (`durability.not_acknowledged`) are infrastructure, retried as such and
 * never counted by the breaker nor told to the model; a deployment that
 * cannot work (`durability.unsupported`, a refused option) fails the job
 * unrecoverably, since no retry can fix it.
 */
import type { Logger } from 'pino';
import { InvalidOptionsError } from '../../core/options.js';
import { DurabilityUnsupportedError, ReceiptNotDurableError } from '../../redis/durability/durability.js';
import { RedisUnreachableError } from '../../redis/connection/unreachable.js';
import { unrecoverable } from '../errors.js';
import { errorText } from '../tools/failure-text.js';
import type { CallAttempt } from '../runtime.js';

/** How deep a chain of `cause`s is followed. */
const MAX_CAUSES = 8;

/** The first error of `error`'s cause chain (itself included) that `is` accepts. */
function inCauses<T>(error: unknown, is: (e: unknown) => e is T): T | undefined {
  let current = error;
  for (let depth = 0; depth <= MAX_CAUSES && current instanceof Error; depth++) {
    if (is(current)) return current;
    current = (current as { cause?: unknown }).cause;
  }
  return undefined;
}

const isInfrastructure = (e: unknown): e is RedisUnreachableError | ReceiptNotDurableError =>
  e instanceof RedisUnreachableError || e instanceof ReceiptNotDurableError;

// Every refused option, durability's included, is an InvalidOptionsError (options.invalid).
const isMisconfiguration = (e: unknown): e is DurabilityUnsupportedError | InvalidOptionsError =>
  e instanceof DurabilityUnsupportedError || e instanceof InvalidOptionsError;

/**
 * The infrastructure error in `error`'s cause chain, if any: a receipt
 * write Redis did not answer or did not make durable (as a tool's
 * `ctx.step` throws it, even wrapped by the tool).
 */
export function infrastructureErrorIn(error: unknown): RedisUnreachableError | ReceiptNotDurableError | undefined {
  return inCauses(error, isInfrastructure);
}

/** Whether `error` (or one of its causes) is an infrastructure failure rather than the tool's. */
export const isInfrastructureError = (error: unknown): boolean => infrastructureErrorIn(error) !== undefined;

/**
 * A tool stopped by infrastructure (a step write Redis did not answer or
 * acknowledge): its effect may have begun, so the attempt is left as a crash
 * would leave it (`markOutcomeUnknown`: a resumable call is taken over from
 * its recorded steps, an opaque one is ambiguous), nothing is counted by the
 * breaker, and the job retries with the infrastructure error itself.
 */
export async function infrastructureFailure(callRun: CallAttempt, error: unknown): Promise<never> {
  const cause = infrastructureErrorIn(error) ?? error;
  const text = errorText(cause);
  callRun.facts.cutOff(callRun.attempt, cause);
  // Best effort: when Redis cannot take this either, the lease lapses instead, to the same end.
  await callRun.runtime.keyspace.receipts
    .markOutcomeUnknown(callRun.key, callRun.fence, `interrupted by infrastructure: ${text}`)
    .catch(() => undefined);
  throw cause;
}

/**
 * What the processor throws for `error`, a job's failure: misconfiguration
 * becomes BullMQ's `UnrecoverableError` (no retry can fix it); infrastructure
 * is logged and thrown as it is, so the job retries; anything else unchanged.
 */
export function endingOf(error: unknown, logger: Logger, jobId: string | undefined): unknown {
  if (isMisconfiguration(error)) {
    logger.error({ jobId, code: error.code, err: error }, 'the deployment cannot work as configured; the job fails without retrying');
    return unrecoverable(error);
  }
  const infrastructure = infrastructureErrorIn(error);
  if (infrastructure) {
    const where =
      infrastructure instanceof RedisUnreachableError
        ? {
            receiptKey: infrastructure.redisKey,
            tool: infrastructure.tool,
            step: infrastructure.step,
            sent: infrastructure.sent,
            releases: infrastructure.releases,
          }
        : { receiptKey: infrastructure.redisKey, step: infrastructure.write };
    logger.warn(
      { jobId, code: infrastructure.code, ...where, error: infrastructure.message },
      'Redis failed the job; it retries as infrastructure',
    );
  }
  return error;
}
