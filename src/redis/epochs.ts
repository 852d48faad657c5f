import { randomBytes } from 'node:crypto';

const EPOCH_BYTES = 12;
/** Epochs drawn from the generator per refill. */
const POOL_EPOCHS = 256;

let pool = Buffer.alloc(0);
let offset = 0;

/**
 * A new lifetime epoch: 12 bytes from the CSPRNG as base64url, unguessable,
 * so no stale fence can name a lifetime it did not see. The bytes are drawn
 * 256 epochs at a time: one `randomBytes` call per claim was a measurable
 * share of a claim's CPU. Each byte is used once.
 */
export function newEpoch(): string {
  if (offset + EPOCH_BYTES > pool.length) {
    pool = randomBytes(EPOCH_BYTES * POOL_EPOCHS);
    offset = 0;
  }
  const epoch = pool.toString('base64url', offset, offset + EPOCH_BYTES);
  offset += EPOCH_BYTES;
  return epoch;
}
