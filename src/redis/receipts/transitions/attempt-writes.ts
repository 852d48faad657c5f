/**
 * The writes of a running attempt besides its settle, each fenced on the
 * attempt: extend its lease (heartbeat), record a finished sub-step, record
 * that its outcome is unknown, and flag an expired attempt ambiguous.
 * `ReceiptStore` answers each under the same name.
 */
import type { EffectResumability } from '../../../core/decision.js';
import { assertWellFormedNames, type ToolCallReceiptKey } from '../../../core/identity.js';
import { InvalidReceiptInputError, UnexpectedScriptReplyError, type AttemptFence } from '../../errors.js';
import { positiveInt } from '../../settings.js';
import { checkedLeaseMs } from '../../options.js';
import { type ReceiptsChannel, toStoredJson } from '../channel.js';
import { STEP_FIELD_PREFIX } from '../reads/record.js';
import type { HeartbeatResult } from '../store-types.js';

/** `ReceiptStore.heartbeat`: the fenced attempt's lease extended to `leaseMs` (default the keyspace's) from now. */
export async function heartbeat(
  ch: ReceiptsChannel,
  key: ToolCallReceiptKey,
  fence: AttemptFence,
  leaseMs?: number,
): Promise<HeartbeatResult> {
  const lease = leaseMs === undefined ? ch.settings.leaseMs : checkedLeaseMs(leaseMs);
  const seen = await ch.fenced('heartbeat', 'heartbeat', ch.transitionKeys(key), fence, [lease, ch.settings.retentionMs]);
  if (seen.leaseUntilMs === null) throw new UnexpectedScriptReplyError('heartbeat', seen);
  return { leaseUntilMs: seen.leaseUntilMs, contested: seen.code === 2 };
}

/** `ReceiptStore.recordStep`: the sub-step `name` of the fenced attempt recorded with `value` (as JSON). */
export async function recordStep(
  ch: ReceiptsChannel,
  key: ToolCallReceiptKey,
  fence: AttemptFence,
  name: string,
  value: unknown,
): Promise<void> {
  if (name.length === 0) throw new InvalidReceiptInputError('a step name must not be empty');
  assertWellFormedNames({ 'step name': name });
  const text = toStoredJson(value, `step ${JSON.stringify(name)}`);
  await ch.fenced('recordStep', 'record-step', ch.transitionKeys(key), fence, [STEP_FIELD_PREFIX + name, text, ch.settings.retentionMs]);
}

/** `ReceiptStore.markOutcomeUnknown`: the fenced attempt left running with its lease expired now and `error` kept. */
export async function markOutcomeUnknown(
  ch: ReceiptsChannel,
  key: ToolCallReceiptKey,
  fence: AttemptFence,
  error: string,
): Promise<{ ambiguousMs: number | null }> {
  const keys = ch.transitionKeys(key);
  const seen = await ch.fenced('markOutcomeUnknown', 'outcome-unknown', keys, fence, [error, ch.settings.retentionMs]);
  return { ambiguousMs: seen.ambiguousMs };
}

/** `ReceiptStore.flagAmbiguous`: the expired attempt `fence` flagged ambiguous; `null` when the receipt moved on. */
export async function flagAmbiguous(
  ch: ReceiptsChannel,
  key: ToolCallReceiptKey,
  fence: AttemptFence,
  effect: EffectResumability,
): Promise<number | null> {
  positiveInt(fence.attempt, 'attempt');
  const flagged = await ch.observe('flag-ambiguous', ch.transitionKeys(key), [fence.attempt, ch.settings.retentionMs, fence.epoch, effect]);
  return flagged.code === 1 || flagged.code === 2 ? flagged.ambiguousMs : null;
}
