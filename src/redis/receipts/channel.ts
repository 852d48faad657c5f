/**
 * The one channel a receipts keyspace talks to Redis through, shared by all
 * its parts: the checked connection, the frozen settings, group commit, one
 * durability waiter, and one mapping of what Redis threw into typed errors.
 */
import { checkOptions, type OptionsSchema } from '../../core/options.js';
import { checkedConnection, type ReceiptsConnection, type RedisConnection } from '../connection/connection.js';
import { stepOfScript, unreachableErrorOf } from '../connection/unreachable.js';
import { DurabilityWaiter } from '../durability/durability.js';
import { GroupCommit } from '../durability/group-commit.js';
import { corruptReceiptErrorOf } from '../errors.js';
import { runScript } from '../scripts/scripts.js';
import { keyspaceSettings, type KeyspaceSettings, type KeyspaceSettingsInput } from '../settings.js';

/** Where a failed command was: its key and the step (default: the key a script was sent for, and the script's step). */
export interface CommandSite {
  readonly redisKey?: string;
  readonly step?: string;
}

/**
 * A connection to the receipts keyspace, made once per keyspace: the
 * call, reconcile, breaker and read parts each hold the same one, so they
 * share its deadline, its group commit batches and its durability waits.
 */
export class ReceiptsChannel {
  readonly redis: ReceiptsConnection;
  readonly settings: KeyspaceSettings;
  /**
   * Waits for the acknowledgements `settings.durability` asks for; undefined when off.
   * @internal
   */
  readonly durability: DurabilityWaiter | undefined;
  /** Whether the connection is a Redis Cluster. */
  readonly clustered: boolean;
  /** Batches claims and completes per tick; undefined with `groupCommit: false`. */
  private readonly group: GroupCommit | undefined;

  /** `redis` and `settings` come from checked options; `site` names the entry point in a refused connection's error. */
  constructor(redis: RedisConnection, settings: KeyspaceSettings, site: string) {
    this.redis = checkedConnection(redis, site, settings.commandTimeoutMs);
    this.settings = settings;
    this.clustered = this.redis.isCluster;
    this.durability = settings.durability ? new DurabilityWaiter(this.redis, settings.durability) : undefined;
    this.group = settings.groupCommit
      ? new GroupCommit((script, keys, args) => runScript(this.redis, script, keys, args), this.clustered)
      : undefined;
  }

  /**
   * The channel a part of the keyspace is made with: the keyspace's own when
   * given one, else a channel of its own from `options`, checked here once
   * against `schema` (throws `options.invalid`, or `redis.invalid_connection`).
   * @internal
   */
  static of<T extends KeyspaceSettingsInput & { readonly redis: RedisConnection }>(
    given: T | ReceiptsChannel,
    site: string,
    schema: OptionsSchema<T>,
  ): ReceiptsChannel {
    if (given instanceof ReceiptsChannel) return given;
    return new ReceiptsChannel(given.redis, keyspaceSettings(checkOptions(site, given, schema)), site);
  }

  /** Group commit's batches so far (two calls or more each) and the calls they carried; zeros when it is off. */
  get groupCommitted(): { readonly batches: number; readonly calls: number } {
    return { ...(this.group?.sent ?? { batches: 0, calls: 0 }) };
  }

  /**
   * Runs a script (batched with others of the tick when group commit takes
   * it). What Redis threw becomes one typed error for every part: a corrupt
   * or newer receipt `CorruptReceiptError` / `ReceiptVersionError`, a
   * timeout or lost connection `RedisTimeoutError` / `RedisConnectionLostError`.
   */
  async call(script: string, keys: readonly string[], args: readonly (string | number)[], site: CommandSite = {}): Promise<unknown> {
    try {
      return await (this.group !== undefined ? this.group.submit(script, keys, args) : runScript(this.redis, script, keys, args));
    } catch (error) {
      throw this.typed(error, { redisKey: site.redisKey ?? keys[0] ?? '', step: site.step ?? stepOfScript(script) });
    }
  }

  /** {@link call}'s mapping, for a command that is not a script. */
  typed(error: unknown, site: { readonly redisKey: string; readonly step: string }): unknown {
    return unreachableErrorOf(corruptReceiptErrorOf(error, site.redisKey), site);
  }
}
