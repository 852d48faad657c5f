/**
 * A receipt as read from the store. `absent` means no receipt under this key.
 * For `running`, `leaseExpired` must be judged on the store's clock.
 */
export type ReceiptState =
  | { readonly kind: 'absent' }
  | { readonly kind: 'completed' }
  | { readonly kind: 'failed'; readonly attempts: number }
  | {
      readonly kind: 'running';
      readonly attempts: number;
      readonly leaseExpired: boolean;
      /**
       * A claim has already reported this attempt ambiguous. The verdict
       * sticks until the receipt is settled (by an operator, or by the
       * attempt itself, late), whatever the lease or a later claim's effect.
       */
      readonly reportedAmbiguous: boolean;
    };

/**
 * Whether an interrupted attempt can be taken over safely.
 *
 * - `resumable`: the tool records its sub-steps as they finish, so a new
 *   attempt can skip what already happened.
 * - `opaque`: one indivisible effect with no trail. After a crash nobody can
 *   tell "never sent" from "sent, then died", so it is never retried blindly.
 */
export type EffectResumability = 'resumable' | 'opaque';

/**
 * The effect a receipt records: an {@link EffectResumability}, or
 * `transactional` for a tool whose outcome is settled from its own
 * PostgreSQL outcome row. A transactional receipt is opaque to every
 * decision here (it is never taken over blindly); what settles it is the row.
 */
export type ReceiptEffect = EffectResumability | 'transactional';

/**
 * The effect a claim's decision is made with when the receipt's recorded
 * effect (set by the claim that created it; `null` when absent or
 * unreadable) and the claim's own disagree: the more conservative one. An
 * existing receipt whose recorded effect is not `resumable` counts as
 * `opaque`. The Lua transitions apply the same rule (`effectIsOpaque` in
 * `lua/includes/fenced.lua`).
 */
export function effectForClaim(recorded: EffectResumability | null, requested: ReceiptEffect, receiptExists: boolean): EffectResumability {
  if (receiptExists && recorded !== 'resumable') return 'opaque';
  return requested !== 'resumable' ? 'opaque' : (recorded ?? requested);
}

/** What the caller should do about a receipt it found. */
export type ReceiptDecision =
  /** Run the tool, then settle the receipt under this attempt number. */
  | { readonly kind: 'execute'; readonly attempt: number }
  /** Do not run the tool: the recorded result is the answer. */
  | { readonly kind: 'replay' }
  /** Another attempt holds a live lease. Come back later. */
  | { readonly kind: 'wait'; readonly reason: string }
  /** The effect may or may not have happened. Refuse to guess; a person decides. */
  | { readonly kind: 'ambiguous'; readonly reason: string };

/**
 * Decide what a found receipt means. Pure and total: every state and effect
 * has exactly one answer, and nothing here reads a clock.
 *
 * An expired lease on a running receipt is not ambiguous by itself: workers
 * stall and die routinely. It is safe to take over only when the effect left
 * a trail (`resumable`); an `opaque` effect is reported as ambiguous instead.
 * Once any claim has reported an attempt ambiguous, every later claim gets
 * the same answer until the receipt is settled, even if the attempt's lease
 * is live again (it heartbeated late) or the later claim asks for
 * `resumable`: a verdict given to one caller is not taken back for another.
 */
export function decideToolCallReceipt(input: { readonly state: ReceiptState; readonly effect: EffectResumability }): ReceiptDecision {
  const { state, effect } = input;
  switch (state.kind) {
    case 'absent':
      return { kind: 'execute', attempt: 1 };
    case 'completed':
      return { kind: 'replay' };
    case 'failed':
      return { kind: 'execute', attempt: state.attempts + 1 };
    case 'running':
      if (state.reportedAmbiguous) {
        return {
          kind: 'ambiguous',
          reason: `attempt ${state.attempts} was already reported ambiguous; it stays so until an operator resolves it or the attempt settles late`,
        };
      }
      if (!state.leaseExpired) {
        return { kind: 'wait', reason: `attempt ${state.attempts} holds a live lease` };
      }
      if (effect === 'resumable') return { kind: 'execute', attempt: state.attempts + 1 };
      return {
        kind: 'ambiguous',
        reason: `attempt ${state.attempts} of an opaque effect lost its lease before completing; the effect may or may not have happened`,
      };
  }
}
