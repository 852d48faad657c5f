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
import { ReceiptNotDurableError } from '../../durability/durability.js';
import { FencedOutError, UnexpectedScriptReplyError, type AttemptFence } from '../../errors.js';
import { parseClaimObservation, parseObservation, toFence, type Observation } from './observation.js';
import { createdFence, prefetched, releaseUnacknowledged, type PrefetchedClaim } from './claim.js';
import type { ClaimChannel, ClaimRequest } from './claim-request.js';
import { releasingLostClaims } from './lost-claims.js';

/** What claiming ahead needs of the store that runs it. */
export interface AheadChannel extends ClaimChannel {
  /** Runs a script taking any number of keys; a corrupt key becomes a typed `CorruptReceiptError`. */
  callVariadic(script: string, keys: readonly string[], args: readonly (string | number)[]): Promise<unknown>;
  /**
   * What must come before a claim that may create a receipt: durability
   * checked, the run registered (see `ReceiptStore.claim`). Resolves to the
   * registration, to await with the script's reply.
   */
  beforeClaim(request: ClaimRequest): Promise<{ readonly registered: Promise<unknown> }>;
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
  ch: AheadChannel,
  complete: CompleteRequest,
  next: ClaimRequest,
): Promise<{ seen: Observation; ahead: PrefetchedClaim | null }> {
  const [receipt, index, breaker, count] = complete.keys;
  const { registered } = await ch.beforeClaim(next);
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
export async function claimTogether(ch: AheadChannel, requests: readonly ClaimRequest[]): Promise<(PrefetchedClaim | null)[]> {
  const [first] = requests;
  if (first === undefined) return [];
  const [, index, breaker, count] = first.keys;
  const { registered } = await ch.beforeClaim(first);
  // A reply lost to a timeout or a dropped connection: release every receipt the group's claims may have created.
  const reply = await releasingLostClaims(
    ch,
    async () => {
      const sent = await ch.callVariadic(
        'claim-group',
        [index, breaker, ...requests.map((r) => r.keys[0]), count],
        requests.flatMap((r) => r.args),
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
  ch: AheadChannel,
  mark: ReturnType<NonNullable<AheadChannel['durability']>['mark']>,
  redisKey: string,
  write: 'claim' | 'complete',
  claims: readonly (readonly [ClaimRequest, PrefetchedClaim | null])[],
): Promise<void> {
  if (!ch.durability) return;
  const ack = await ch.durability.acknowledged(mark);
  if (ack.ok) return;
  const error = new ReceiptNotDurableError(redisKey, write, ack, ch.durability.options);
  for (const [request, answer] of claims) {
    if (answer?.fence) await releaseUnacknowledged(ch, request, answer.fence, error);
  }
  throw error;
}
