/**
 * Defaults and the one validation rule the Redis stores share for their
 * numeric settings.
 */
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
