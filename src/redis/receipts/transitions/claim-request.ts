/**
 * One call's claim as it is sent: the request (keys, arguments, the minted
 * epoch) built from a call's options, and the channel a claim goes through.
 * Beside the claim rounds so lost-claim release can name both without a circle.
 */
import type { ReceiptEffect } from '../../../core/decision.js';
import type { ToolCallReceiptKey } from '../../../core/identity.js';
import type { DurabilityWaiter } from '../../durability/durability.js';
import { InvalidReceiptInputError } from '../../errors.js';
import { breakerField } from '../../keys.js';
import { positiveInt } from '../../settings.js';
import { attemptJobText } from '../reads/record.js';
import type { ClaimOptions } from '../store-types.js';
import { newEpoch } from './epochs.js';

/** One call's claim, ready to send: its keys and the claim script's arguments. */
export interface ClaimRequest {
  readonly key: ToolCallReceiptKey;
  /** Receipt, run index, breaker hash, counting set: the KEYS of claim-4.lua. */
  readonly keys: readonly [string, string, string, string];
  /** ARGV of claim-4.lua, with the epoch a receipt this claim creates gets. */
  readonly args: readonly (string | number)[];
  readonly effect: ReceiptEffect;
  readonly leaseMs: number;
  readonly owner: string;
  /** The attempt's job as stored (`''` for none), for a reclaim. */
  readonly job: string;
  /**
   * The epoch minted for this claim: the lifetime's epoch when the claim
   * creates the receipt, and the token a takeover stores, so a claim whose
   * reply is lost can release exactly the attempt it started.
   */
  readonly token: string;
}

/** What a claim needs of the store it runs in. */
export interface ClaimChannel {
  readonly retentionMs: number;
  readonly durability: DurabilityWaiter | undefined;
  /** Runs a receipt script; a corrupt key becomes a typed `CorruptReceiptError`. */
  call(script: string, keys: readonly string[], args: readonly (string | number)[]): Promise<unknown>;
}

/** Checks a claim's options and builds its keys and arguments (minting the epoch). */
export function claimRequest(
  key: ToolCallReceiptKey,
  keys: readonly [string, string, string, string],
  options: ClaimOptions,
  defaults: { readonly leaseMs: number; readonly retentionMs: number; readonly owner: string },
): ClaimRequest {
  if (options.effect !== 'resumable' && options.effect !== 'opaque' && options.effect !== 'transactional') {
    throw new InvalidReceiptInputError(`effect must be 'resumable', 'opaque' or 'transactional', got ${String(options.effect)}`);
  }
  const leaseMs = positiveInt(options.leaseMs ?? defaults.leaseMs, 'leaseMs');
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
  ];
  return { key, keys, args, effect: options.effect, leaseMs, owner, job, token };
}
