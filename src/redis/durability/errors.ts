/**
 * The errors of durability: a server that cannot acknowledge as asked, and a
 * receipt write that was not acknowledged (or whose WAIT failed).
 */
import { ToolReceiptsError } from '../../core/errors.js';

/** Which receipt write was not acknowledged. */
export type DurableWrite =
  | 'claim'
  | 'complete'
  | 'fail'
  | 'markOutcomeUnknown'
  | 'heartbeat'
  | 'recordStep'
  | 'resolve'
  | 'reconcile'
  | 'reclaimKeyed'
  | 'approvalGate'
  | 'approvalDecision'
  | 'limit'
  | 'offload';

/**
 * `aof: true` was asked of a server without `WAITAOF` (Redis < 7.2). Nothing
 * was written. Drop `aof` and run Redis with `appendfsync always` instead, or
 * upgrade Redis.
 */
export class DurabilityUnsupportedError extends ToolReceiptsError {
  readonly code = 'durability.unsupported';
}

/**
 * A receipt write was not acknowledged by the replicas (or fsyncs) the
 * durability options ask for within `timeoutMs`, or the `WAIT` asking for
 * them got no answer (no reply within the store's deadline, a closed
 * connection; that error is the `cause`): a failover now could lose it.
 * Retryable. After a claim the effect was not started, and the attempt was
 * settled as failed (`neverStarted`) where the primary took that write, so
 * the next delivery runs the call again as a new attempt.
 */
export class ReceiptNotDurableError extends ToolReceiptsError {
  readonly code = 'durability.not_acknowledged';
  /**
   * `cause`: why the `WAIT` itself failed, when it did; `acknowledged` then
   * counts nothing, as no answer came.
   */
  constructor(
    readonly redisKey: string,
    readonly write: DurableWrite,
    readonly acknowledged: { readonly replicas: number; readonly localFsync?: boolean },
    /** The durability options asked for (`DurabilityOptions`, defaults filled in). */
    readonly wanted: { readonly replicas: number; readonly timeoutMs: number; readonly aof: boolean },
    cause?: unknown,
  ) {
    const fsync = wanted.aof ? ` and ${acknowledged.localFsync ? 'the primary fsynced it' : 'the primary did not fsync it'}` : '';
    const what =
      cause === undefined
        ? `was acknowledged by ${acknowledged.replicas} of the ${wanted.replicas} replica(s) asked for within ${wanted.timeoutMs} ms${fsync}`
        : `could not be confirmed: the ${wanted.aof ? 'WAITAOF' : 'WAIT'} asking for its acknowledgement failed (${describeFailure(cause)})`;
    super(`${write} of ${redisKey} ${what}; a failover could lose it, ${whatNext(write)}`, cause === undefined ? undefined : { cause });
  }
}

/** What whoever made `write` should do now that it was not acknowledged. */
function whatNext(write: DurableWrite): string {
  if (write === 'claim') return 'so the job should retry (the effect was not started)';
  // An operator's resolve landed on the primary: a second one is refused there, so look before resolving again.
  if (write === 'resolve') return 'so read the receipt again once the replicas answer, and resolve it again if it is still ambiguous';
  return 'so the job should retry';
}

/** A thrown value's message, for an error sentence. */
export function describeFailure(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
