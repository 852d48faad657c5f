/**
 * An operator's verdict on an ambiguous receipt (`ReceiptStore.resolve`):
 * checked, sent as `resolve-3.lua` fenced on what the operator saw, and the
 * script's refusal turned into the error that says why.
 */
import type { ToolCallReceiptKey } from '../../../core/identity.js';
import { ContestedReceiptError, FencedOutError, InvalidReceiptInputError, NotAmbiguousError } from '../../errors.js';
import { positiveInt } from '../../settings.js';
import { type ReceiptsChannel, toFence, toStoredJson } from '../channel.js';
import { checkVerdictText } from '../reads/history.js';
import { RESOLUTION_BY_MAX, RESOLUTION_NOTE_MAX, type Resolution } from '../store-types.js';

/** Settles an ambiguous receipt as `resolution` says, recording `by` (default the keyspace's owner) and `note`. */
export async function resolveReceipt(ch: ReceiptsChannel, key: ToolCallReceiptKey, resolution: Resolution): Promise<void> {
  const attempt = positiveInt(resolution.attemptsSeen, 'attemptsSeen');
  const epochSeen = resolution.epochSeen;
  if (epochSeen !== undefined && (typeof epochSeen !== 'string' || epochSeen === '')) {
    throw new InvalidReceiptInputError('epochSeen must be the non-empty epoch shown on the receipt, or left out');
  }
  let payload: string;
  if (resolution.outcome === 'completed') {
    payload = toStoredJson(resolution.result, 'the result');
  } else if (resolution.outcome === 'failed') {
    payload = resolution.error;
  } else {
    throw new InvalidReceiptInputError(`outcome must be 'completed' or 'failed'`);
  }
  const by = checkVerdictText(resolution.by, 'by', RESOLUTION_BY_MAX) ?? ch.settings.owner;
  const note = checkVerdictText(resolution.note, 'note', RESOLUTION_NOTE_MAX) ?? '';
  const keys = ch.transitionKeys(key);
  const seen = await ch.observe('resolve', keys, [
    attempt,
    resolution.outcome,
    payload,
    ch.settings.retentionMs,
    epochSeen ?? '',
    by,
    note,
  ]);
  const mark = ch.durability?.mark(keys[0]);
  if (seen.code === 1) return ch.durability?.require('resolve', keys[0], mark);
  const fence = toFence(seen);
  if (seen.code === 4 && fence) throw new ContestedReceiptError(keys[0], fence, seen.leaseUntilMs);
  if (seen.code === 3 && fence) {
    throw new NotAmbiguousError(
      keys[0],
      fence,
      seen.leaseExpired ? 'its effect is resumable and no claim found it ambiguous' : 'its lease is still live',
    );
  }
  throw new FencedOutError(keys[0], { attempt, epoch: epochSeen }, fence, 'resolve');
}
