/**
 * Whether any receipt exists under a prefix (or of one tenant under it), so
 * an operator's empty answer can tell "none of what you asked for" from
 * "nothing at all here: check --prefix or --tenant".
 */
import { scanKeys, type RedisConnection } from '../connection/connection.js';
import { encodeKeyComponent, isReceiptRedisKey, receiptScanPattern } from '../keys.js';
import type { RunRegistry } from './registry.js';

/** SCAN pattern of the receipts under `prefix`, or of one tenant's (an encoded component holds no glob characters). */
function pattern(prefix: string, tenantId: string | undefined): string {
  return tenantId === undefined ? receiptScanPattern(prefix) : `${prefix}:rcpt:{${encodeKeyComponent(tenantId)}|*`;
}

/**
 * True when the registry names a run under the prefix (of the tenant, when
 * given), or else a SCAN finds a receipt key there (receipts an earlier
 * version wrote, before runs were registered). A registered run counts even
 * once its receipts have expired: the prefix (or tenant) is in use. The SCAN
 * stops at the first receipt; when there is none it walks the whole keyspace
 * (`count` is its batch hint), so it is meant for an answer already found
 * empty.
 */
export async function receiptsExist(
  redis: RedisConnection,
  registry: RunRegistry,
  options: { readonly tenantId?: string; readonly count: number },
): Promise<boolean> {
  for await (const page of registry.runs(options.tenantId)) {
    if (page.length > 0) return true;
  }
  for await (const keys of scanKeys(redis, pattern(registry.prefix, options.tenantId), options.count)) {
    if (keys.some((k) => isReceiptRedisKey(registry.prefix, k))) return true;
  }
  return false;
}
