/** Reading one receipt by the Redis key an operator pasted. */
import type { ReceiptRecord } from '../redis/receipts/reads/record.js';
import type { ReceiptStore } from '../redis/receipts/store.js';
import { ReceiptNotFoundError } from './errors.js';
import { parseReceiptRedisKey } from './receipt-key.js';

/**
 * Reads the receipt under a Redis key, refusing a key that is not a receipt
 * key under the store's prefix (`InvalidReceiptKeyError`) or under which no
 * receipt exists ({@link ReceiptNotFoundError}).
 */
export async function readReceipt(store: ReceiptStore, redisKey: string): Promise<ReceiptRecord> {
  const { key } = parseReceiptRedisKey(redisKey, store.prefix);
  const record = await store.inspect(key);
  if (record === null) throw new ReceiptNotFoundError(redisKey);
  return record;
}
