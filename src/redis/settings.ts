/**
 * The receipts keyspace's settings: their defaults (each written here once),
 * the one numeric rule the stores share, and the frozen settings a keyspace
 * is built from, made from options a schema has already checked.
 */
import { randomBytes } from 'node:crypto';
import os from 'node:os';
import { MAX_TOOL_FAILURES, MAX_TOOL_REJECTIONS } from '../core/tiers.js';
import { filledDurability, type DurabilityOptions } from './durability/durability.js';
import { InvalidReceiptInputError } from './errors.js';
import { DEFAULT_KEY_PREFIX } from './keys.js';

/** Default lease of an attempt: 30 s. */
export const DEFAULT_LEASE_MS = 30_000;
/** Default time a settled receipt (and a run's breaker counters) is kept: 24 h. */
export const DEFAULT_RETENTION_MS = 86_400_000;
/**
 * Default `commandTimeoutMs` of the stores: 5 s, a sixth of the default
 * lease, so two heartbeats can time out before it lapses.
 */
export const DEFAULT_COMMAND_TIMEOUT_MS = 5_000;

/** `value` when it is a positive safe integer; otherwise an {@link InvalidReceiptInputError} naming `what`. */
export function positiveInt(value: number, what: string): number {
  if (!Number.isSafeInteger(value) || value <= 0) {
    throw new InvalidReceiptInputError(`${what} must be a positive integer, got ${value}`);
  }
  return value;
}

/** The key prefix and retention every store takes, with their defaults (the store's schema has checked them). */
export function storeSettings(options: { prefix?: string; retentionMs?: number }): { prefix: string; retentionMs: number } {
  return { prefix: options.prefix ?? DEFAULT_KEY_PREFIX, retentionMs: options.retentionMs ?? DEFAULT_RETENTION_MS };
}

/**
 * The layout a keyspace's claims create receipts in: `2` (3 for a
 * transactional tool's or an approval's receipt), which every release reads;
 * `4`, the same receipt without the fields `tenant`, `run`, `tool` and
 * `args_hash` its key already names; or `5`, the compact layout: layout 4
 * named in its run's sorted sets by a short member and with a long result
 * kept in parts, so that at the server's default listpack limits a receipt
 * costs Redis about half what layout 2 does (docs/receipts.md). Releases
 * before this one refuse layout 5 receipts (`receipt.version`), so a fleet
 * moves to it in two steps (docs/upgrading.md). A receipt that exists keeps
 * its own layout whatever the setting.
 */
export type ReceiptLayout = 2 | 4 | 5;

/** The layout new receipts are written in when `receiptLayout` is not given: the compact one (releases before this one refuse it). */
export const DEFAULT_RECEIPT_LAYOUT: ReceiptLayout = 5;

/** What a receipts keyspace is made of, every default filled in; frozen, and read by each of its parts. */
export interface KeyspaceSettings {
  readonly prefix: string;
  readonly retentionMs: number;
  /** The lease of an attempt when a claim does not say. */
  readonly leaseMs: number;
  /** The worker's name on the receipts it claims and resolves. */
  readonly owner: string;
  readonly commandTimeoutMs: number;
  /** Undefined when off. */
  readonly durability: Required<DurabilityOptions> | undefined;
  readonly groupCommit: boolean;
  /** The layout the claims of this keyspace create receipts in (see {@link ReceiptLayout}). */
  readonly receiptLayout: ReceiptLayout;
  /** Breaker limits: failures, and consecutive rejections, that remove a tool for the run. */
  readonly maxFailures: number;
  readonly maxRejections: number;
}

/** The options a keyspace's settings come from, as some schema has checked them. */
export interface KeyspaceSettingsInput {
  readonly prefix?: string | undefined;
  readonly retentionMs?: number | undefined;
  readonly leaseMs?: number | undefined;
  readonly owner?: string | undefined;
  readonly commandTimeoutMs?: number | undefined;
  readonly durability?: DurabilityOptions | undefined;
  readonly groupCommit?: boolean | undefined;
  readonly receiptLayout?: ReceiptLayout | undefined;
  readonly maxFailures?: number | undefined;
  readonly maxRejections?: number | undefined;
}

/** A default owner, one per keyspace: `<hostname>:<pid>:<random>`. */
const defaultOwner = (): string => `${os.hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`;

/** The frozen settings of checked options: nothing is validated again here. */
export function keyspaceSettings(options: KeyspaceSettingsInput): KeyspaceSettings {
  return Object.freeze({
    ...storeSettings({ prefix: options.prefix, retentionMs: options.retentionMs }),
    leaseMs: options.leaseMs ?? DEFAULT_LEASE_MS,
    owner: options.owner ?? defaultOwner(),
    commandTimeoutMs: options.commandTimeoutMs ?? DEFAULT_COMMAND_TIMEOUT_MS,
    durability: options.durability === undefined ? undefined : filledDurability(options.durability),
    groupCommit: options.groupCommit !== false,
    receiptLayout: options.receiptLayout ?? DEFAULT_RECEIPT_LAYOUT,
    maxFailures: options.maxFailures ?? MAX_TOOL_FAILURES,
    maxRejections: options.maxRejections ?? MAX_TOOL_REJECTIONS,
  });
}
