/**
 * Attempts a claim started whose effect will never start, settled as failed
 * `neverStarted` so they are not left running to become ambiguous: a claim
 * whose write was not acknowledged as durability asks, and a claim whose
 * reply was lost. A claim that timed out or lost its connection
 * after the client sent it may still have landed: then its attempt is running under this worker's
 * name with a live lease, and once the lease lapsed an opaque call would be
 * ambiguous and wait for a person. Yet the worker knows its effect never
 * started (it starts only after the reply). So once Redis answers again the
 * attempt is settled as failed `neverStarted` by `release-lost-claim-3.lua`,
 * which touches only the attempt this very claim started (its fence, its
 * owner and the claim's unguessable token), and the next delivery runs the
 * call as its next attempt.
 */
import { RedisUnreachableError, type LostClaimRelease } from '../../connection/unreachable.js';
import type { ReceiptNotDurableError } from '../../durability/durability.js';
import type { AttemptFence } from '../../errors.js';
import { parseObservation, type ReceiptsChannel } from '../channel.js';
import type { ClaimRequest, LostClaim } from '../store-types.js';

/** Tries at releasing a lost claim before leaving its lease to lapse. */
export const LOST_CLAIM_RELEASE_TRIES = 8;
/**
 * The longest a lost claim's release is tried, in ms, whatever the
 * connection's own retries make a try last: then the attempt, if it landed,
 * is left for its lease to lapse (a try still in flight may land later, and
 * does the same harmless, fenced release).
 */
export const LOST_CLAIM_RELEASE_BUDGET_MS = 10_000;
/** The wait after the first failed try; it doubles after each, up to {@link MAX_DELAY_MS}. */
const FIRST_DELAY_MS = 100;
const MAX_DELAY_MS = 2_000;

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms).unref());
const GAVE_UP = Symbol('gave up');

/**
 * Releases one lost claim, trying until Redis answers (with backoff, at most
 * {@link LOST_CLAIM_RELEASE_TRIES} times and {@link LOST_CLAIM_RELEASE_BUDGET_MS}
 * in all). Never throws.
 */
export async function releaseLostClaim(
  ch: ReceiptsChannel,
  claim: LostClaim,
  cause: RedisUnreachableError,
  text = `the reply of this attempt's ${cause.step} was lost (${cause.code}), so its effect never started`,
): Promise<LostClaimRelease> {
  const { request, fence } = claim;
  const keys = [request.keys[0], request.keys[1], request.keys[3]] as const;
  const args = [fence.attempt, fence.epoch, request.owner, request.token, text, ch.settings.retentionMs];
  const outcome = (o: LostClaimRelease['outcome']): LostClaimRelease => ({ redisKey: keys[0], attempt: fence.attempt, outcome: o });
  const deadline = performance.now() + LOST_CLAIM_RELEASE_BUDGET_MS;
  let delay = FIRST_DELAY_MS;
  for (let tries = 1; ; tries++) {
    try {
      const sent = ch.call('release-lost-claim', keys, args);
      sent.catch(() => undefined); // a try given up on may still fail later
      const reply = await Promise.race([sent, sleep(Math.max(0, deadline - performance.now())).then(() => GAVE_UP)]);
      if (reply === GAVE_UP) return outcome('unknown');
      const seen = parseObservation('release-lost-claim', reply);
      const released = seen.code === 1 || seen.code === 2;
      if (released) await ch.durability?.acknowledged(ch.durability.mark(keys[0])).catch(() => undefined);
      // Code 3: an earlier try, sent while Redis did not answer, released it.
      return outcome(released || seen.code === 3 ? 'released' : 'notLanded');
    } catch (error) {
      if (!(error instanceof RedisUnreachableError) || tries >= LOST_CLAIM_RELEASE_TRIES) return outcome('unknown');
    }
    const left = deadline - performance.now();
    if (left <= 0) return outcome('unknown');
    await sleep(Math.min(delay, left));
    delay = Math.min(delay * 2, MAX_DELAY_MS);
  }
}

/**
 * An attempt whose claim was not acknowledged: its effect never starts, so
 * settle it as failed `neverStarted`. Acknowledged or not: a failover that
 * loses this write may lose the claim with it, or keep the claim and lose
 * only this write, and then the attempt is left running and, once its lease
 * lapses, an opaque call reads as ambiguous. A fail whose reply is lost (Redis frozen or
 * failing over, as it often is when a WAIT went unanswered) is followed by
 * the release a lost claim gets, tried until Redis answers. Never throws.
 */
export async function releaseUnacknowledged(
  ch: ReceiptsChannel,
  request: ClaimRequest,
  fence: AttemptFence,
  cause: ReceiptNotDurableError,
): Promise<void> {
  const keys = [request.keys[0], request.keys[1], request.keys[3]] as const;
  try {
    const seen = parseObservation(
      'fail',
      await ch.call('fail', keys, [fence.attempt, cause.message, 'neverStarted', ch.settings.retentionMs, fence.epoch]),
    );
    const mark = ch.durability?.mark(keys[0]);
    if (seen.code === 1 || seen.code === 2) await ch.durability?.acknowledged(mark);
  } catch (error) {
    // The fail may not have landed: release this claim's attempt (and only it) once Redis answers again.
    if (error instanceof RedisUnreachableError) await releaseLostClaim(ch, { request, fence }, error, cause.message);
    // Anything else, or no answer within the release's budget: the lease lapses as any interrupted attempt's would.
  }
}
