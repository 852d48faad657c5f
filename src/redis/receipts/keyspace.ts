/**
 * One object for the receipts keyspace: made once from checked, frozen
 * settings, it owns the one channel to Redis and holds the parts that use it
 * (calls, reconcile, breaker, reads), each small and named for its side.
 */
import { checkOptions, wholeNumber, type OptionsSchema } from '../../core/options.js';
import type { RedisConnection } from '../connection/connection.js';
import { keyspaceSettings, type KeyspaceSettings, type KeyspaceSettingsInput } from '../settings.js';
import { ReceiptsChannel } from './channel.js';
import { checkReceiptsRedis } from './reachable.js';
import type { ReceiptQueries } from './reads/read-side.js';
import { ReceiptStore } from './store.js';
import { RECEIPT_STORE_SCHEMA, type ReceiptStoreOptions } from './store-options.js';
import { BreakerStore } from './transitions/breaker-store.js';
import { ReconcileStore } from './transitions/reconcile-store.js';

/** The options of a {@link ReceiptsKeyspace}: a `ReceiptStore`'s, and the breaker's limits. */
export interface ReceiptsKeyspaceOptions extends ReceiptStoreOptions {
  /** Failures that remove a tool for the run. Default `MAX_TOOL_FAILURES` (5). */
  maxFailures?: number;
  /** Consecutive rejections that remove a tool for the run. Default `MAX_TOOL_REJECTIONS` (5). */
  maxRejections?: number;
}

/** The rule of each {@link ReceiptsKeyspaceOptions} option. */
export const RECEIPTS_KEYSPACE_SCHEMA: OptionsSchema<ReceiptsKeyspaceOptions> = {
  ...RECEIPT_STORE_SCHEMA,
  maxFailures: wholeNumber(1),
  maxRejections: wholeNumber(1),
};

/**
 * The receipts under one prefix on one connection, as one object: its
 * options are checked once, its settings frozen, and every part shares its
 * one channel (one deadline, one group commit, one durability waiter, one
 * mapping of Redis errors to typed ones). `receipts` claims and settles
 * calls, `reconciles` settles expired opaque attempts, `breaker` counts
 * failures and rejections, `reads` reads (as `receipts` does too).
 */
export class ReceiptsKeyspace {
  readonly settings: KeyspaceSettings;
  /** The call side: claim, settle, heartbeat, resolve (and every read). */
  readonly receipts: ReceiptStore;
  /** The reconcile side. */
  readonly reconciles: ReconcileStore;
  /** The circuit breaker's counters. */
  readonly breaker: BreakerStore;
  /** The one channel the parts share. */
  readonly channel: ReceiptsChannel;

  private constructor(channel: ReceiptsChannel) {
    this.channel = channel;
    this.settings = channel.settings;
    this.receipts = new ReceiptStore(channel);
    this.reconciles = new ReconcileStore(channel);
    this.breaker = new BreakerStore(channel);
  }

  /**
   * Checks that Redis answers and can run the package's scripts (one PING,
   * the scripts loaded on every master), writing no key; throws
   * `redis.unavailable` naming where the client connects. See
   * `checkReceiptsRedis`.
   */
  checkRedis(): Promise<void> {
    return checkReceiptsRedis(this.channel);
  }

  /** The read side (the one `receipts` answers through). */
  get reads(): ReceiptQueries {
    return this.receipts.reads;
  }

  /** Checks `options` and opens the keyspace; throws `options.invalid` (or `redis.invalid_connection`). */
  static open(options: ReceiptsKeyspaceOptions): ReceiptsKeyspace {
    checkOptions('ReceiptsKeyspace', options, RECEIPTS_KEYSPACE_SCHEMA);
    return ReceiptsKeyspace.ofChecked(options.redis, options, 'ReceiptsKeyspace');
  }

  /**
   * The keyspace of options an entry point has already checked with a schema
   * holding these rules (so they are not parsed again): `site` names it in
   * errors.
   */
  static ofChecked(redis: RedisConnection, options: KeyspaceSettingsInput, site: string): ReceiptsKeyspace {
    return new ReceiptsKeyspace(new ReceiptsChannel(redis, keyspaceSettings(options), site));
  }
}
