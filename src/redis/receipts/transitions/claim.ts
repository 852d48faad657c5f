/**
 * The claim of a receipt, out of the store: the observe / compare-and-set
 * rounds that turn what a claim script saw into a decision (the request they
 * send is built in `claim-request.ts`). One piece of code for both ways a claim starts: the claim
 * script on its own, or a settle that carried the next call's claim
 * (`complete-claim-5.lua`), whose answer is then handed in as the first
 * round's.
 */
import {
  decideToolCallReceipt,
  effectForClaim,
  type EffectResumability,
  type ReceiptEffect,
  type ReceiptState,
} from '../../../core/decision.js';
import type { ToolCallReceiptKey } from '../../../core/identity.js';
import { ReceiptNotDurableError, type WriteMark } from '../../durability/durability.js';
import { InvalidReceiptInputError, UnexpectedScriptReplyError, type AttemptFence } from '../../errors.js';
import { parseClaimObservation, parseObservation, toReceiptState, type ClaimObservation, type Observation } from './observation.js';
import type { ClaimResult } from '../store-types.js';
import { fromStoredJson } from '../stored-json.js';
import { releasingLostClaims } from './lost-claims.js';
import type { ClaimChannel, ClaimRequest } from './claim-request.js';

/** Rounds of observe / compare-and-set a claim tries before giving up; each lost round means another caller made progress. */
const MAX_CLAIM_ROUNDS = 16;

/**
 * A claim the settle of the previous call of the same turn already made
 * (see `ReceiptStore.completeAndClaim`): hand it to `ReceiptStore.claim` for
 * that call, which then decides from it instead of sending the claim script.
 * An attempt it started has been acknowledged as the store's durability asks.
 */
export interface PrefetchedClaim {
  /** The call it claims. */
  readonly key: ToolCallReceiptKey;
  readonly redisKey: string;
  readonly effect: ReceiptEffect;
  readonly leaseMs: number;
  readonly owner: string;
  /** What the claim script answered. */
  readonly observation: ClaimObservation;
  /**
   * Whether the answer is the whole claim: it created the receipt (the call
   * now owns attempt 1), the tool is removed, or the receipt it found is to
   * be replayed or waited for. Otherwise the claim goes on with more
   * commands (a takeover, or an ambiguous attempt to flag or settle).
   */
  readonly answersAlone: boolean;
  /** Set when the answer started an attempt: its fence. */
  readonly fence?: AttemptFence;
}

/** The fence of the attempt `request` starts when it creates the receipt: attempt 1 of the lifetime it mints. */
export const createdFence = (request: ClaimRequest): AttemptFence => ({ attempt: 1, epoch: request.token });

/** The claim script's answer for `request`, as a {@link PrefetchedClaim}. */
export function prefetched(request: ClaimRequest, observation: ClaimObservation): PrefetchedClaim {
  let answersAlone = observation.code !== 0;
  if (!answersAlone) {
    const effect = effectForClaim(observation.effect, request.effect, true);
    const kind = decideToolCallReceipt({ state: toReceiptState(observation), effect }).kind;
    answersAlone = kind === 'replay' || kind === 'wait' || (kind === 'execute' && observation.toolRemoval !== null);
  }
  const fence = observation.code === 1 ? { attempt: observation.attempts, epoch: observation.epoch } : undefined;
  return {
    key: request.key,
    redisKey: request.keys[0],
    effect: request.effect,
    leaseMs: request.leaseMs,
    owner: request.owner,
    observation,
    answersAlone,
    fence,
  };
}

/** Refuses a prefetched claim made for another call, or with other options than this claim's. */
export function checkPrefetched(request: ClaimRequest, ahead: PrefetchedClaim): void {
  if (
    ahead.redisKey !== request.keys[0] ||
    ahead.effect !== request.effect ||
    ahead.leaseMs !== request.leaseMs ||
    ahead.owner !== request.owner
  ) {
    throw new InvalidReceiptInputError(
      `the prefetched claim of ${ahead.redisKey} does not match this claim of ${request.keys[0]}: pass the same call with the same effect, lease and owner`,
    );
  }
}

type Breaker = { toolRemoval?: string; rejectionStreak: number };

/**
 * Runs a claim to its decision (see `ReceiptStore.claim`). `registered` is
 * the run's registration, awaited with the first claim script; `first` is a
 * claim script answer already in hand (a prefetched claim), used for the
 * first round instead of sending the script.
 */
export async function runClaim(
  ch: ClaimChannel,
  request: ClaimRequest,
  settlesExpired: boolean,
  registered: Promise<unknown>,
  first?: ClaimObservation,
): Promise<ClaimResult> {
  const redisKey = request.keys[0];
  const keys: [string, string, string] = [request.keys[0], request.keys[1], request.keys[3]];
  const run = async (script: string, args: readonly (string | number)[]) => parseObservation(script, await ch.call(script, keys, args));
  let seen: Observation | null = null;
  let pending = first;
  // The breaker as the latest claim script read it.
  let breaker: Breaker = { rejectionStreak: 0 };
  for (let round = 0; round < MAX_CLAIM_ROUNDS; round++) {
    if (seen === null || seen.status === null) {
      let claimed: ClaimObservation;
      let mark: WriteMark | undefined;
      // An answer in hand was acknowledged with the write that carried it.
      const acknowledged = pending !== undefined;
      if (pending !== undefined) {
        claimed = pending;
        pending = undefined;
      } else {
        // A reply lost to a timeout or a dropped connection: release the receipt the claim may have created.
        const reply = await releasingLostClaims(
          ch,
          async () => {
            const sent = await ch.call('claim', request.keys, request.args);
            await registered;
            return sent;
          },
          () => [{ request, fence: createdFence(request) }],
        );
        mark = ch.durability?.mark(redisKey);
        claimed = parseClaimObservation('claim', reply);
      }
      breaker =
        claimed.toolRemoval === null
          ? { rejectionStreak: claimed.rejectionStreak }
          : { toolRemoval: claimed.toolRemoval, rejectionStreak: claimed.rejectionStreak };
      seen = claimed;
      if (claimed.code === 1) {
        const result = executing({ kind: 'absent' }, claimed, effectForClaim(null, request.effect, false), redisKey, breaker);
        return acknowledged ? result : durableClaim(ch, request, result, mark);
      }
      if (claimed.code === 2) {
        // Tool removed and no receipt: the script wrote nothing, and neither does the store.
        const state: ReceiptState = { kind: 'absent' };
        const effect = effectForClaim(null, request.effect, false);
        return { decision: decideToolCallReceipt({ state, effect }), state, effect, redisKey, ...breaker };
      }
    }
    const state = toReceiptState(seen);
    const effect = effectForClaim(seen.effect, request.effect, true);
    const decision = decideToolCallReceipt({ state, effect });
    switch (decision.kind) {
      case 'replay': {
        const result = fromStoredJson(seen.resultText);
        return result === undefined
          ? { decision, state, effect, redisKey, ...breaker }
          : { decision, state, effect, redisKey, result, ...breaker };
      }
      case 'wait':
        return { decision, state, effect, redisKey, leaseRemainingMs: seen.leaseRemainingMs, serverNowMs: seen.nowMs, ...breaker };
      case 'execute': {
        // A removed tool is never taken over: report the decision, write nothing.
        if (breaker.toolRemoval !== undefined) return { decision, state, effect, redisKey, ...breaker };
        const observed: Observation = seen;
        // A takeover whose reply was lost: release the attempt it may have started (attempts + 1, carrying its token).
        const won: Observation = await releasingLostClaims(
          ch,
          () =>
            run('reclaim', [
              observed.status ?? '',
              observed.attempts,
              request.leaseMs,
              ch.retentionMs,
              request.owner,
              observed.epoch,
              request.effect,
              request.job,
              request.token,
            ]),
          () => [{ request, fence: { attempt: observed.attempts + 1, epoch: observed.epoch } }],
        );
        const mark = ch.durability?.mark(redisKey);
        if (won.code === 1) {
          if (won.attempts !== decision.attempt) throw new UnexpectedScriptReplyError('reclaim', won);
          return durableClaim(ch, request, executing(state, won, effect, redisKey, breaker), mark);
        }
        seen = won;
        continue;
      }
      case 'ambiguous': {
        if (settlesExpired) {
          const lostFence = { attempt: seen.attempts, epoch: seen.epoch };
          return { decision, state, effect, redisKey, leaseRemainingMs: 0, lostFence, ...breaker };
        }
        const flagged = await run('flag-ambiguous', [seen.attempts, ch.retentionMs, seen.epoch, request.effect]);
        if (flagged.code === 1 || flagged.code === 2) {
          return {
            decision,
            state,
            effect,
            redisKey,
            leaseRemainingMs: 0,
            ...(flagged.ambiguousMs === null ? {} : { ambiguousMs: flagged.ambiguousMs }),
            ...breaker,
          };
        }
        seen = flagged;
        continue;
      }
    }
  }
  throw new UnexpectedScriptReplyError('claim', `no decision after ${MAX_CLAIM_ROUNDS} contended rounds on ${redisKey}`);
}

function executing(state: ReceiptState, won: Observation, effect: EffectResumability, redisKey: string, breaker: Breaker): ClaimResult {
  return {
    decision: { kind: 'execute', attempt: won.attempts },
    state,
    attempt: won.attempts,
    fence: { attempt: won.attempts, epoch: won.epoch },
    effect,
    redisKey,
    leaseRemainingMs: won.leaseRemainingMs,
    ...(won.leaseUntilMs === null ? {} : { leaseUntilMs: won.leaseUntilMs }),
    rejectionStreak: breaker.rejectionStreak,
  };
}

/** The execute result, once the claim that started its attempt is acknowledged. */
async function durableClaim(
  ch: ClaimChannel,
  request: ClaimRequest,
  result: ClaimResult,
  mark: WriteMark | undefined,
): Promise<ClaimResult> {
  if (!ch.durability || result.fence === undefined) return result;
  try {
    await ch.durability.require('claim', result.redisKey, mark);
  } catch (error) {
    if (error instanceof ReceiptNotDurableError) {
      await releaseUnacknowledged(ch, request, result.fence, error);
      throw error;
    }
    throw error;
  }
  return result;
}

/**
 * An attempt whose claim was not acknowledged: its effect never starts, so
 * settle it as failed `neverStarted` (acknowledged or not: a failover that
 * loses this write loses the claim with it). Never throws.
 */
export async function releaseUnacknowledged(
  ch: ClaimChannel,
  request: ClaimRequest,
  fence: AttemptFence,
  cause: ReceiptNotDurableError,
): Promise<void> {
  const keys = [request.keys[0], request.keys[1], request.keys[3]] as const;
  try {
    const seen = parseObservation(
      'fail',
      await ch.call('fail', keys, [fence.attempt, cause.message, 'neverStarted', ch.retentionMs, fence.epoch]),
    );
    const mark = ch.durability?.mark(keys[0]);
    if (seen.code === 1 || seen.code === 2) await ch.durability?.acknowledged(mark);
  } catch {
    // Redis may be going away; the claim's lease then lapses as any interrupted attempt's would.
  }
}
