/**
 * Claims made ahead of the call that decides from them: a complete that also
 * claims the next call of its run (`complete-claim-5.lua`), and one script
 * claiming every call of a side-by-side group (`claim-group-N.lua`). Each
 * answer is a claim script's reply, handed to `ReceiptStore.claim` for its
 * call, which decides from it exactly as from its own. With durability, one
 * acknowledgement covers the whole write; when it falls short, every attempt
 * the write started is settled as failed `neverStarted` before the error is
 * thrown, so an unacknowledged claim never starts its effect.
 */
import { decideToolCallReceipt, effectForClaim, type ReceiptEffect } from '../../../core/decision.js';
import type { ToolCallReceiptKey } from '../../../core/identity.js';
import type { WriteMark } from '../../durability/durability.js';
import { FencedOutError, InvalidReceiptInputError, UnexpectedScriptReplyError, type AttemptFence } from '../../errors.js';
import {
  parseClaimObservation,
  parseObservation,
  toFence,
  toReceiptState,
  type ClaimObservation,
  type Observation,
  type ReceiptsChannel,
} from '../channel.js';
import type { ClaimRequest } from '../store-types.js';
import { createdFence, releasingLostClaims } from './claim.js';
import { releaseUnacknowledged } from './lost-claims.js';

/**
 * What must come before a claim that may create a receipt: durability
 * checked, the run registered (see `ReceiptStore.claim`). Answers (at once
 * when nothing need be waited for first) the registration, to await with
 * the script's reply.
 */
export type BeforeClaim = (
  request: ClaimRequest,
) => { readonly registered: Promise<unknown> } | Promise<{ readonly registered: Promise<unknown> }>;

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
  refuseCarriedApproval(request);
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

/**
 * A claim carried in another write (or prefetched) never refuses a lifetime
 * nobody approved (complete-claim-5.lua and claim-group-N.lua pass claim-4.lua's
 * first thirteen arguments), so a call that needs approval claims on its own.
 */
export function refuseCarriedApproval(request: ClaimRequest): void {
  if (request.needsApproval) {
    throw new InvalidReceiptInputError(`the claim of ${request.keys[0]} needs approval: claim it on its own, not carried in another write`);
  }
}

/** The keys and arguments of a complete (as `complete-4.lua` takes them) for the fence that makes it. */
export interface CompleteRequest {
  readonly keys: readonly [string, string, string, string];
  readonly args: readonly (string | number)[];
  readonly fence: AttemptFence;
}

/**
 * Completes (fenced) and, once settled, claims `next` in one script. Throws
 * `FencedOutError` when the complete did not land (then nothing was
 * claimed). Returns the settle's observation and the next call's answer
 * (`null` when its keys are corrupt and nothing was claimed).
 */
export async function completeAndClaimNext(
  ch: ReceiptsChannel,
  beforeClaim: BeforeClaim,
  complete: CompleteRequest,
  next: ClaimRequest,
): Promise<{ seen: Observation; ahead: PrefetchedClaim | null }> {
  const [receipt, index, breaker, count] = complete.keys;
  const { registered } = await beforeClaim(next);
  // A reply lost to a timeout or a dropped connection: release the receipt the next call's claim may have created.
  const reply = await releasingLostClaims(
    ch,
    async () => {
      const sent = await ch.call('complete-claim', [receipt, index, breaker, next.keys[0], count], [...complete.args, ...next.args]);
      await registered;
      return sent;
    },
    () => [{ request: next, fence: createdFence(next) }],
  );
  const mark = ch.durability?.mark(receipt);
  if (!Array.isArray(reply) || reply.length !== 2 || !Array.isArray(reply[1])) {
    throw new UnexpectedScriptReplyError('complete-claim', reply);
  }
  const seen = parseObservation('complete-claim', reply[0]);
  if (seen.code !== 1 && seen.code !== 2) throw new FencedOutError(receipt, complete.fence, toFence(seen), 'complete');
  const ahead = reply[1].length === 0 ? null : prefetched(next, parseClaimObservation('complete-claim', reply[1]));
  await requireAcknowledged(ch, mark, receipt, 'complete', [[next, ahead]]);
  return { seen, ahead };
}

/**
 * The claim script's answer for each of `requests` (calls of one run), from
 * one `claim-group-N.lua` round trip; `null` for a call whose keys are
 * corrupt (nothing was written for it).
 */
export async function claimTogether(
  ch: ReceiptsChannel,
  beforeClaim: BeforeClaim,
  requests: readonly ClaimRequest[],
): Promise<(PrefetchedClaim | null)[]> {
  const [first] = requests;
  if (first === undefined) return [];
  const [, index, breaker, count] = first.keys;
  const { registered } = await beforeClaim(first);
  // A reply lost to a timeout or a dropped connection: release every receipt the group's claims may have created.
  const reply = await releasingLostClaims(
    ch,
    async () => {
      const keys = [index, breaker, ...requests.map((r) => r.keys[0]), count];
      const sent = await ch.call(
        'claim-group',
        [String(keys.length), ...keys],
        requests.flatMap((r) => r.args),
        { redisKey: index },
      );
      await registered;
      return sent;
    },
    () => requests.map((request) => ({ request, fence: createdFence(request) })),
  );
  const mark = ch.durability?.mark(first.keys[0]);
  if (!Array.isArray(reply) || reply.length !== requests.length) throw new UnexpectedScriptReplyError('claim-group', reply);
  const answers = requests.map((request, i) => {
    const answer: unknown = reply[i];
    return Array.isArray(answer) && answer.length === 0 ? null : prefetched(request, parseClaimObservation('claim-group', answer));
  });
  await requireAcknowledged(
    ch,
    mark,
    first.keys[0],
    'claim',
    requests.map((request, i) => [request, answers[i] ?? null]),
  );
  return answers;
}

/** Waits for the write's acknowledgement; short of it, releases every attempt the write started and throws. */
async function requireAcknowledged(
  ch: ReceiptsChannel,
  mark: WriteMark | undefined,
  redisKey: string,
  write: 'claim' | 'complete',
  claims: readonly (readonly [ClaimRequest, PrefetchedClaim | null])[],
): Promise<void> {
  if (!ch.durability) return;
  const ack = await ch.durability.acknowledged(mark);
  if (ack.ok) return;
  const error = ch.durability.refusal(write, redisKey, ack);
  for (const [request, answer] of claims) {
    if (answer?.fence) await releaseUnacknowledged(ch, request, answer.fence, error);
  }
  throw error;
}
