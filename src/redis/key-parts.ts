/**
 * Receipt keys read back: the call a receipt key names, and the receipt a
 * run's sorted-set member names (the whole key in layouts 1 to 4, the
 * compact member of `callMember` in layout 5, see keys.ts).
 */
import type { ToolCallReceiptKey } from '../core/identity.js';
import { decodeKeyComponent } from './keys.js';

/** The receipt key's part after the hash tag that a member of {@link callMember} names (either form). */
export function callPartOfMember(member: string): string {
  const equals = member.indexOf('=');
  if (equals < 0) return member;
  return `${member.slice(0, equals)}:${Buffer.from(member.slice(equals + 1), 'base64url').toString('hex')}`;
}

/**
 * The receipt key an entry of the run index `runIndexKey` names: the entry
 * itself when it is a whole key (layouts 1 to 4 list receipts so), else the
 * key its compact member ({@link callMember}) stands for.
 */
export function receiptKeyOfRunEntry(runIndexKey: string, entry: string): string {
  if (entry.includes('{')) return entry;
  const at = runIndexKey.lastIndexOf(':run:{');
  return `${runIndexKey.slice(0, at)}:rcpt:${runIndexKey.slice(at + 5)}:${callPartOfMember(entry)}`;
}

const RECEIPT_KEY_SHAPE = /^([A-Za-z0-9._~:/-]+):rcpt:\{([^{}:|]*)\|([^{}:|]*)\}:([^{}:|]*):([^{}:|]*)$/;

/**
 * A receipt key taken apart: the prefix it lives under and the call it
 * names, each component decoded (a prefix holds no braces, so the run's hash
 * tag is the key's only one); `undefined` when `redisKey` does not have a
 * receipt key's shape. Throws a `RangeError` for a component that is not
 * percent-encoded. A layout-4 receipt stores none of the call's names, so
 * its readers take them from here.
 */
export function receiptRedisKeyParts(redisKey: string): { prefix: string; key: ToolCallReceiptKey } | undefined {
  const match = RECEIPT_KEY_SHAPE.exec(redisKey);
  if (!match) return undefined;
  const [, prefix, tenant, run, tool, hash] = match as unknown as [string, string, string, string, string, string];
  return {
    prefix,
    key: {
      tenantId: decodeKeyComponent(tenant),
      runId: decodeKeyComponent(run),
      toolName: decodeKeyComponent(tool),
      argsHash: decodeKeyComponent(hash),
    },
  };
}

/** The names of a call as a receipt's hash may store them (layout 4 stores none). */
export interface StoredCallNames {
  readonly tenant?: string | undefined;
  readonly run?: string | undefined;
  readonly tool?: string | undefined;
  readonly args_hash?: string | undefined;
}

/**
 * The call a receipt is for: each name as its hash stores it, or, where the
 * hash stores none (layout 4), decoded from its key ({@link receiptRedisKeyParts});
 * `''` for a name neither gives.
 */
export function receiptCallOf(redisKey: string, stored: StoredCallNames): ToolCallReceiptKey {
  const { tenant, run, tool, args_hash: argsHash } = stored;
  if (tenant !== undefined && run !== undefined && tool !== undefined && argsHash !== undefined) {
    return { tenantId: tenant, runId: run, toolName: tool, argsHash };
  }
  let named: ToolCallReceiptKey | undefined;
  try {
    named = receiptRedisKeyParts(redisKey)?.key;
  } catch {
    // A key that is not one the store writes names nothing: the stored names (or '') stand.
  }
  return {
    tenantId: tenant ?? named?.tenantId ?? '',
    runId: run ?? named?.runId ?? '',
    toolName: tool ?? named?.toolName ?? '',
    argsHash: argsHash ?? named?.argsHash ?? '',
  };
}
