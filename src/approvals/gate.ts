/**
 * The worker's side of approvals: the gate a call of a tool with an approval
 * rule passes before its claim (`lua/approval-gate-3.lua`), the rule and the
 * redact hook applied, and the sentence the model reads after a denial.
 */
import type { ReceiptEffect } from '../core/decision.js';
import type { ToolCallReceiptKey } from '../core/identity.js';
import { UnexpectedScriptReplyError } from '../redis/errors.js';
import type { ReceiptsChannel } from '../redis/receipts/channel.js';
import { newEpoch } from '../redis/receipts/transitions/epochs.js';
import type { AttemptJob } from '../redis/receipts/reads/record.js';
import { attemptJobText } from '../redis/receipts/transitions/claim.js';
import { pendingApprovalsRedisKey } from './keys.js';
import { AuditLog } from '../redis/operators/audit-log.js';
import type { ApprovalContext, ApprovalRule } from './types.js';

/** Default `approvalTimeoutMs`: 24 h. */
export const DEFAULT_APPROVAL_TIMEOUT_MS = 86_400_000;

/** What the gate answered for a call. */
export type GateAnswer =
  /** No approval state: claim as usual. */
  | { readonly kind: 'claim' }
  /** Approved, not started: claim, and the claim starts it. */
  | { readonly kind: 'approved' }
  /**
   * Awaiting a decision until `expiresAtMs` (server clock; `nowMs` is the
   * server's now). `listedNow`: this gate added it to the pending index,
   * where it was not: it was created now, or by a gate whose worker never
   * listed it (it died first, or its write was not acknowledged).
   */
  | {
      readonly kind: 'await';
      readonly created: boolean;
      readonly listedNow: boolean;
      readonly expiresAtMs: number;
      readonly nowMs: number;
      readonly epoch: string;
    }
  /** Denied (`actor` is `expiry` when it expired; `expiredNow` when this gate wrote the expiry): never run. */
  | { readonly kind: 'denied'; readonly actor: string; readonly note?: string; readonly expired: boolean; readonly expiredNow: boolean };

/**
 * Whether a call needs approval, and why, by a tool's rule; `undefined` when
 * it does not. Any answer but a falsy one asks (a rule that returns something
 * unexpected errs on the side of a person); a string `reason` is kept.
 */
export function approvalNeeded(rule: ApprovalRule | undefined, args: unknown, ctx: ApprovalContext): { reason?: string } | undefined {
  if (rule === undefined) return undefined;
  if (rule === 'always') return {};
  const answer: unknown = rule(args, ctx);
  if (!answer) return undefined;
  const reason = typeof answer === 'object' ? (answer as { reason?: unknown }).reason : undefined;
  return typeof reason === 'string' && reason !== '' ? { reason } : {};
}

/** What an approver is shown: the redact hook's answer as JSON text, `''` without a hook (or with an answer that is not JSON). */
export function shownText(redact: ((args: unknown) => unknown) | undefined, args: unknown): string {
  if (redact === undefined) return '';
  try {
    return JSON.stringify(redact(args)) ?? '';
  } catch {
    return '';
  }
}

/** The sentence the model reads for a denied call. Attacker-influenced text (the note) is quoted, never obeyed. */
export function deniedText(toolName: string, answer: Extract<GateAnswer, { kind: 'denied' }>): string {
  if (answer.expired) {
    return `Not run: ${toolName} needed a person's approval and nobody approved it before the approval expired, so it counts as denied. Do not retry it.`;
  }
  const why = answer.note ? ` The reason given: ${JSON.stringify(answer.note)}.` : ' No reason was given.';
  return `Not run: ${toolName} was denied by ${JSON.stringify(answer.actor)}, who was asked to approve it.${why} Do not retry it.`;
}

/** One call's gate request. */
export interface GateRequest {
  readonly key: ToolCallReceiptKey;
  /** Set when the call needs approval. */
  readonly needed: { readonly reason?: string } | undefined;
  /** The effect the receipt records (`transactional` too, so a started call is settled from its outcome row). */
  readonly effect: ReceiptEffect;
  readonly timeoutMs: number;
  /** JSON text of what the approver is shown, `''` for nothing. */
  readonly shown: string;
  readonly job: AttemptJob | undefined;
}

/** Runs the approval gate on one prefix. */
export class ApprovalGate {
  /**
   * The gate on a receipts keyspace's channel: its prefix, retention and
   * receipt layout, and its writes, so a gate's answer is acknowledged as
   * durably as a claim's (and its errors typed alike).
   */
  constructor(
    private readonly channel: ReceiptsChannel,
    /**
     * Registers the call's run in the run registry as the gate's write may
     * create its first receipt, as a claim does (the store's `registerRun`),
     * so a run whose calls only ever awaited approval, or were denied, is
     * counted too. None: nothing registered.
     */
    private readonly registerRun?: (key: ToolCallReceiptKey) => Promise<unknown>,
  ) {}

  /**
   * Passes the gate. A call awaiting approval is in the prefix's pending
   * index once it passes (added when missing, whoever created it, so a call
   * whose first gate never listed it is listed by the next); an expiry it
   * wrote goes into the operators' audit log as a denial by `expiry` (a
   * failure of either is handed to `onIndexError`; the receipt is the truth).
   */
  async pass(request: GateRequest, onIndexError: (error: unknown) => void): Promise<GateAnswer> {
    const { prefix, retentionMs, receiptLayout } = this.channel.settings;
    const [receipt, index, , count] = this.channel.callKeys(request.key);
    // Beside the write, as a claim's: a registration that failed is an index error, the receipt being the truth.
    const registered = this.registerRun?.(request.key).catch(onIndexError);
    const reply = await this.channel.write(
      'approvalGate',
      'approval-gate',
      [receipt, index, count],
      [
        request.needed ? '1' : '0',
        newEpoch(receipt),
        request.key.tenantId,
        request.key.runId,
        request.key.toolName,
        request.key.argsHash,
        request.effect,
        request.needed?.reason ?? '',
        request.timeoutMs,
        request.shown,
        retentionMs,
        request.job ? attemptJobText(request.job) : '',
        receiptLayout,
      ],
    );
    await registered;
    if (!Array.isArray(reply)) throw new UnexpectedScriptReplyError('approval-gate', reply);
    const [what, epoch, , expires, by, note, deniedReason, now, created] = reply.map(String);
    switch (what) {
      case 'claim':
        return { kind: 'claim' };
      case 'approved':
        return { kind: 'approved' };
      case 'await': {
        const expiresAtMs = Number(expires);
        const pending = pendingApprovalsRedisKey(prefix);
        const added = await this.channel.command('ZADD', [pending, expiresAtMs, receipt], pending).catch((error: unknown) => {
          onIndexError(error);
          return 0;
        });
        return {
          kind: 'await',
          created: created === '1',
          listedNow: Number(added) === 1,
          expiresAtMs,
          nowMs: Number(now),
          epoch: epoch ?? '',
        };
      }
      case 'denied':
        if (created === '1') await this.recordExpiry(receipt, epoch ?? '', onIndexError);
        return {
          kind: 'denied',
          actor: by ?? '',
          ...(note ? { note } : {}),
          expired: deniedReason === 'expired',
          expiredNow: created === '1',
        };
      default:
        throw new UnexpectedScriptReplyError('approval-gate', reply);
    }
  }

  /** The expiry the gate just wrote, in the audit log as every decision is; the index entry goes with it. */
  private async recordExpiry(receipt: string, epoch: string, onError: (error: unknown) => void): Promise<void> {
    const pending = pendingApprovalsRedisKey(this.channel.settings.prefix);
    await this.channel.command('ZREM', [pending, receipt], pending).catch(onError);
    await new AuditLog(this.channel.redis, this.channel.settings.prefix)
      .append({
        actor: 'expiry',
        source: 'worker',
        action: 'deny',
        receipts: [receipt],
        detail: { decision: 'denied', reason: 'expired', epoch },
      })
      .catch(onError);
  }
}
