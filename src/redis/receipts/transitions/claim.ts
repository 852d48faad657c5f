/**
 * One call's claim, from its request to its decision: the request (keys,
 * arguments, the minted epoch), the observe / compare-and-set rounds that
 * turn what the claim script saw into a decision, and the release of an
 * attempt whose reply was lost. One piece of code for both ways a claim
 * starts: the claim script on its own, or a write that carried it
 * (`claims-ahead.ts`), whose answer is then handed in as the first round's.
 * Over 300 lines: the request, the epoch it mints and the rounds are one
 * claim's path, which every executed call runs; apart, each call would
 * enter one more file.
 */
import { randomBytes } from 'node:crypto';
import {
  decideToolCallReceipt,
  effectForClaim,
  type EffectResumability,
  type ReceiptEffect,
  type ReceiptState,
} from '../../../core/decision.js';
import type { ToolCallReceiptKey } from '../../../core/identity.js';
import { RedisUnreachableError } from '../../connection/unreachable.js';
import { ReceiptNotDurableError, type WriteMark } from '../../durability/durability.js';
import { InvalidReceiptInputError, UnexpectedScriptReplyError, type AttemptFence } from '../../errors.js';
import { breakerField, COMPACT_RECEIPT_SCHEMA, runIndexEntry } from '../../keys.js';
import type { KeyspaceSettings } from '../../settings.js';
import { checkedLeaseMs } from '../../options.js';
import {
  type ClaimObservation,
  fromStoredJson,
  type Observation,
  OBSERVATION_FIELDS,
  parseClaimObservation,
  parseObservation,
  type ReceiptsChannel,
  toReceiptState,
} from '../channel.js';
import type { AttemptJob } from '../reads/record.js';
import type { ClaimOptions, ClaimRequest, ClaimResult, LostClaim, StandingFailure } from '../store-types.js';
import { releaseLostClaim, releaseUnacknowledged } from './lost-claims.js';

/**
 * The effect a claim that found no receipt decides with, by the effect it
 * asked for: `effectForClaim`'s rule, worked out once for each effect, as
 * every executed call's claim reads it.
 */
const EFFECT_OF_NEW_RECEIPT: Readonly<Record<ReceiptEffect, EffectResumability>> = {
  opaque: effectForClaim(null, 'opaque', false),
  resumable: effectForClaim(null, 'resumable', false),
  transactional: effectForClaim(null, 'transactional', false),
};

/** Checks a claim's options and builds its keys and arguments (minting the epoch). */
export function claimRequest(
  key: ToolCallReceiptKey,
  keys: readonly [string, string, string, string],
  options: ClaimOptions,
  defaults: Pick<KeyspaceSettings, 'leaseMs' | 'retentionMs' | 'owner' | 'receiptLayout'>,
): ClaimRequest {
  if (options.effect !== 'resumable' && options.effect !== 'opaque' && options.effect !== 'transactional') {
    throw new InvalidReceiptInputError(`effect must be 'resumable', 'opaque' or 'transactional', got ${String(options.effect)}`);
  }
  // The keyspace's lease was checked with its options; only a lease given per call is checked here.
  const leaseMs = options.leaseMs === undefined ? defaults.leaseMs : checkedLeaseMs(options.leaseMs);
  const owner = options.owner ?? defaults.owner;
  const job = options.job ? attemptJobText(options.job) : '';
  // The epoch a receipt this claim creates gets (unguessable, so no stale fence can name it),
  // and the token a takeover stores.
  const token = newEpoch(keys[0]);
  const args = [
    leaseMs,
    defaults.retentionMs,
    owner,
    options.effect,
    key.tenantId,
    key.runId,
    key.toolName,
    key.argsHash,
    breakerField(key.toolName, 'removed'),
    breakerField(key.toolName, 'rejections'),
    token,
    job,
    // The layout a receipt this claim creates is written in (claim-4.lua's ARGV[13]); the compact one with the
    // receipt's member in its run's sets, made here where it costs a fraction of what the script would pay.
    defaults.receiptLayout === COMPACT_RECEIPT_SCHEMA
      ? `${COMPACT_RECEIPT_SCHEMA}:${runIndexEntry(keys[0], COMPACT_RECEIPT_SCHEMA)}`
      : defaults.receiptLayout,
  ];
  const needsApproval = options.needsApproval === true;
  return { key, keys, args, effect: options.effect, leaseMs, owner, job, token, needsApproval, onSent: options.onSent };
}

/** The stored form of an {@link AttemptJob} (`job:<attempt>`). */
export function attemptJobText(job: AttemptJob): string {
  return JSON.stringify({ queue: job.queue, prefix: job.prefix, id: job.id });
}

/** Bytes of one token (96 bits, 16 characters as base64url), and tokens drawn from the generator per refill. */
const TOKEN_BYTES = 12;
const POOL_TOKENS = 256;

let pool = Buffer.alloc(0);
let offset = 0;

/**
 * A fresh unguessable token (a lifetime's epoch, a limit reservation's id, a cap slot's holder): 12 bytes
 * from the CSPRNG as base64url, drawn 256 tokens at a time (one `randomBytes` call per token was a measurable
 * share of a call's CPU); each byte is used once.
 */
export function randomToken(): string {
  if (offset + TOKEN_BYTES > pool.length) {
    pool = randomBytes(TOKEN_BYTES * POOL_TOKENS);
    offset = 0;
  }
  const token = pool.toString('base64url', offset, offset + TOKEN_BYTES);
  offset += TOKEN_BYTES;
  return token;
}

/** Characters of an epoch's random part (12 bytes as base64url); 4 characters of its check follow. */
export const EPOCH_RANDOM_CHARS = 16;

/**
 * The check that ties an epoch's random part to its receipt: FNV-1a over
 * UTF-16 code units, folded to 24 bits, as 4 base64url characters (cheap,
 * and the same in every process).
 */
export function epochCheck(redisKey: string, random: string): string {
  let hash = 0x811c9dc5;
  const text = `${redisKey}\n${random}`;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  hash >>>= 0;
  const folded = (hash >>> 24) ^ (hash & 0xffffff);
  return Buffer.from([folded >>> 16, (folded >>> 8) & 0xff, folded & 0xff]).toString('base64url');
}

/**
 * A new lifetime epoch for the receipt under `redisKey`: 12 bytes from the
 * CSPRNG as base64url (unguessable, so no stale fence can name a lifetime it
 * did not see), then the 4 characters of its {@link epochCheck}, so
 * `epochOrigin` can tell an epoch once minted for this receipt from a
 * mistyped one or another receipt's. The bytes come from `randomToken`'s
 * pool.
 */
export function newEpoch(redisKey: string): string {
  const random = randomToken();
  return random + epochCheck(redisKey, random);
}

/**
 * Runs `send` (a claim, or a write carrying claims); when Redis does not
 * answer it, releases every attempt it may have started (`lost()`, see
 * `lost-claims.ts`), then throws the typed error with `releases` filled in.
 * A write the client never sent (`sent: false`), and any other error, is
 * thrown unchanged.
 */
export function releasingLostClaims<T>(ch: ReceiptsChannel, send: () => Promise<T>, lost: () => readonly LostClaim[]): Promise<T> {
  // A handler on the reply, not an async frame around it: every claim comes here, and almost every one is answered.
  return send().catch(async (error: unknown) => {
    // A claim the client never sent started nothing: fail at once, with nothing to release.
    if (!(error instanceof RedisUnreachableError) || !error.sent) throw error;
    for (const claim of lost()) error.releases.push(await releaseLostClaim(ch, claim, error));
    throw error;
  });
}

/** Rounds of observe / compare-and-set a claim tries before giving up; each lost round means another caller made progress. */
const MAX_CLAIM_ROUNDS = 16;

/**
 * The run registration of a claim whose run is known registered (its
 * registration landed, or the write that carried the claim made it): the
 * claim's reply is then not chained to it.
 */
export const REGISTERED: Promise<unknown> = Promise.resolve();

/** The fence of the attempt `request` starts when it creates the receipt: attempt 1 of the lifetime it mints. */
export const createdFence = (request: ClaimRequest): AttemptFence => ({ attempt: 1, epoch: request.token });

type Breaker = { toolRemoval?: string; rejectionStreak: number };

/**
 * Runs a claim to its decision (see `ReceiptStore.claim`). `registered` is
 * the run's registration, awaited with the first claim script; `first` is a
 * claim script answer already in hand (a prefetched claim), used for the
 * first round instead of sending the script.
 */
export async function runClaim(
  ch: ReceiptsChannel,
  request: ClaimRequest,
  settlesExpired: boolean,
  registered: Promise<unknown>,
  first?: ClaimObservation,
): Promise<ClaimResult> {
  const redisKey = request.keys[0];
  const keys: [string, string, string] = [request.keys[0], request.keys[1], request.keys[3]];
  const run = (script: string, args: readonly (string | number)[]) => ch.observe(script, keys, args);
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
          () => {
            // A call that needs approval adds claim-4.lua's ARGV[14]; the thirteen others are every claim's.
            const sent = ch.call('claim', request.keys, request.needsApproval ? [...request.args, '1'] : request.args);
            // Sent already (the channel submits at once): what this sends follows the claim.
            request.onSent?.(request.token);
            // The reply, once the run's registration (sent first) has landed too.
            return registered === REGISTERED ? sent : sent.then((answer) => registered.then(() => answer));
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
        const result = executing({ kind: 'absent' }, claimed, EFFECT_OF_NEW_RECEIPT[request.effect], redisKey, breaker);
        return acknowledged ? result : durableClaim(ch, request, result, mark);
      }
      if (claimed.code === 2 || claimed.code === 3) {
        // Tool removed, or a lifetime nobody approved, and no receipt: the script wrote nothing, and neither does the store.
        const state: ReceiptState = { kind: 'absent' };
        const effect = EFFECT_OF_NEW_RECEIPT[request.effect];
        const decision = decideToolCallReceipt({ state, effect });
        if (claimed.code === 3) return { decision, state, effect, redisKey, approvalNeeded: true, ...breaker };
        return { decision, state, effect, redisKey, ...breaker };
      }
    }
    const state = toReceiptState(seen);
    const effect = effectForClaim(seen.effect, request.effect, true);
    const decision = decideToolCallReceipt({ state, effect });
    switch (decision.kind) {
      // Plain fields, no spreads, on the paths most claims take (a spread copies its object the slow way).
      case 'replay': {
        const { toolRemoval, rejectionStreak } = breaker;
        const result = fromStoredJson(seen.resultText);
        // A completion without a value replays with no `result` at all (`'result' in claim` is false).
        return result === undefined
          ? { decision, state, effect, redisKey, toolRemoval, rejectionStreak }
          : { decision, state, effect, redisKey, result, toolRemoval, rejectionStreak };
      }
      case 'wait': {
        const { toolRemoval, rejectionStreak } = breaker;
        const { leaseRemainingMs, nowMs } = seen;
        return { decision, state, effect, redisKey, leaseRemainingMs, serverNowMs: nowMs, toolRemoval, rejectionStreak };
      }
      case 'execute': {
        // A removed tool is never taken over: report the decision, write nothing.
        if (breaker.toolRemoval !== undefined) return { decision, state, effect, redisKey, ...breaker };
        const observed: Observation = seen;
        // A takeover whose reply was lost: release the attempt it may have started (attempts + 1, carrying its token).
        const reply = await releasingLostClaims(
          ch,
          () =>
            ch.call('reclaim', keys, [
              observed.status ?? '',
              observed.attempts,
              request.leaseMs,
              ch.settings.retentionMs,
              request.owner,
              observed.epoch,
              request.effect,
              request.job,
              request.token,
              // A failure this job recorded, of a kind it is never retried for, stands for its later deliveries.
              '1',
            ]),
          () => [{ request, fence: { attempt: observed.attempts + 1, epoch: observed.epoch } }],
        );
        const stands = standingFailure(reply);
        if (stands !== undefined) return { decision: { kind: 'replay' }, state, effect, redisKey, failure: stands, ...breaker };
        const won = parseObservation('reclaim', reply);
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
        const flagged = await run('flag-ambiguous', [seen.attempts, ch.settings.retentionMs, seen.epoch, request.effect]);
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

/**
 * The failure reclaim-3.lua answered stands for this job (code 2: the
 * observation, then the recorded error and tier), or `undefined` for any
 * other answer, which is an observation.
 */
function standingFailure(reply: unknown): StandingFailure | undefined {
  if (!Array.isArray(reply) || reply.length !== OBSERVATION_FIELDS + 2 || Number(reply[0]) !== 2) return undefined;
  const observed = parseObservation('reclaim', reply.slice(0, OBSERVATION_FIELDS));
  const tier = String(reply[OBSERVATION_FIELDS + 1]);
  if (observed.status !== 'failed' || (tier !== 'neutral' && tier !== 'destructive'))
    throw new UnexpectedScriptReplyError('reclaim', reply);
  return { error: String(reply[OBSERVATION_FIELDS]), tier };
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
    leaseUntilMs: won.leaseUntilMs ?? undefined,
    rejectionStreak: breaker.rejectionStreak,
  };
}

/** The execute result, once the claim that started its attempt is acknowledged (at once without durability). */
function durableClaim(
  ch: ReceiptsChannel,
  request: ClaimRequest,
  result: ClaimResult,
  mark: WriteMark | undefined,
): ClaimResult | Promise<ClaimResult> {
  if (!ch.durability || result.fence === undefined) return result;
  return acknowledgedClaim(ch, ch.durability, request, result, result.fence, mark);
}

/** {@link durableClaim} with durability: an attempt whose claim falls short of its replicas is settled as never started. */
async function acknowledgedClaim(
  ch: ReceiptsChannel,
  durability: NonNullable<ReceiptsChannel['durability']>,
  request: ClaimRequest,
  result: ClaimResult,
  fence: AttemptFence,
  mark: WriteMark | undefined,
): Promise<ClaimResult> {
  try {
    await durability.require('claim', result.redisKey, mark);
  } catch (error) {
    if (error instanceof ReceiptNotDurableError) await releaseUnacknowledged(ch, request, fence, error);
    throw error;
  }
  return result;
}
