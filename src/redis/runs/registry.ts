/**
 * The registry of runs that have receipts under a prefix, so fleet-wide
 * counts find every run's counting set without walking the keyspace.
 *
 * Layout: `<prefix>:runs:{runs-<n>}`, sorted sets, `n` in `0..15` chosen by a
 * hash of the tenant (so one tenant's runs sit in one shard, and a Redis
 * Cluster spreads the shards over its nodes). A member is a run's hash-tag
 * text `<tenant>|<run>` (both percent-encoded), scored by when a store last
 * registered it (ms, the server's clock, so no worker's clock matters).
 *
 * A store registers a run before the claim that could create its first
 * receipt, and the claim waits for it, so a run with a receipt is always
 * registered (the approval gate, which may create it too, registers the run
 * beside its write and waits for both). Each process re-registers a run at most once a minute (the
 * call side, `ReceiptStore`, remembers what it registered). An entry
 * goes only when its run's counting set is gone and it was registered more
 * than {@link REGISTRATION_GRACE_MS} ago: the grace covers a registration
 * whose claim has not landed yet, so pruning can never drop a run that still
 * has receipts.
 */
import { receiptsConnection, type ReceiptsConnection, type RedisConnection } from '../connection/connection.js';
import { zrangeWithScores } from '../connection/clients/commands.js';
import { encodeKeyComponent, RUN_REGISTRY_SHARDS, runRegistrationTag, runRegistryRedisKey, runRegistryShardKey } from '../keys.js';
import { runScript } from '../scripts/scripts.js';

export { RUN_REGISTRY_SHARDS, runRegistryRedisKey, runRegistryShardKey } from '../keys.js';

/** How old an entry whose counting set is gone must be before it is dropped (1 h). */
export const REGISTRATION_GRACE_MS = 3_600_000;

/** One registered run. */
export interface RegisteredRun {
  /** The run's hash-tag text, `<tenant>|<run>` percent-encoded (what goes between the braces of its keys). */
  readonly tag: string;
  /** When it was last registered, in ms of the server clock. */
  readonly registeredMs: number;
  /** The registry shard holding it. */
  readonly shardKey: string;
}

/** A member that can be a run's hash tag: two encoded components (no decoding: stats reads thousands). */
const TAG = /^[A-Za-z0-9._~%-]*\|[A-Za-z0-9._~%-]*$/;

/** Entries read per ZRANGE, so a registry of millions of runs never arrives as one reply. */
const PAGE = 5_000;

/** Registers runs under one prefix and lists them. */
export class RunRegistry {
  private readonly redis: ReceiptsConnection;

  constructor(
    redis: RedisConnection,
    readonly prefix: string,
  ) {
    this.redis = receiptsConnection(redis);
  }

  /**
   * Registers the run (or refreshes its registration), as a claim does
   * before it may create the run's first receipt (the call side remembers
   * which runs it registered in the last minute, so a claim sends it at most
   * once a minute per run and process). Every call sends it: `force` is
   * kept so callers of earlier releases, which remembered here, still
   * compile.
   */
  async register(tenantId: string, runId: string, force?: boolean): Promise<void> {
    void force;
    await runScript(this.redis, 'register-run', [runRegistryShardKey(this.prefix, tenantId)], [runRegistrationTag(tenantId, runId)]);
  }

  /** Every registered run, or only `tenantId`'s, a page at a time. */
  async *runs(tenantId?: string): AsyncGenerator<RegisteredRun[]> {
    const shards =
      tenantId === undefined
        ? Array.from({ length: RUN_REGISTRY_SHARDS }, (_, n) => runRegistryRedisKey(this.prefix, n))
        : [runRegistryShardKey(this.prefix, tenantId)];
    const ofTenant = tenantId === undefined ? undefined : `${encodeKeyComponent(tenantId)}|`;
    for (const shardKey of shards) {
      for (let start = 0; ; start += PAGE) {
        const reply = await zrangeWithScores(this.redis, shardKey, start, start + PAGE - 1);
        const page: RegisteredRun[] = [];
        for (const [tag, registeredMs] of reply) {
          if (!TAG.test(tag) || (ofTenant !== undefined && !tag.startsWith(ofTenant))) continue;
          page.push({ tag, registeredMs, shardKey });
        }
        if (page.length > 0) yield page;
        if (reply.length < PAGE) break;
      }
    }
  }

  /**
   * Drops `runs` (whose counting sets the caller found gone) that were
   * registered more than {@link REGISTRATION_GRACE_MS} before `nowMs`. An
   * entry is removed only while it still has the score the caller read (one
   * script compares and removes), so a run registered again meanwhile stays.
   * Returns how many were dropped.
   */
  async prune(runs: readonly RegisteredRun[], nowMs: number): Promise<number> {
    let dropped = 0;
    for (const run of runs) {
      if (run.registeredMs >= nowMs - REGISTRATION_GRACE_MS) continue;
      dropped += Number(await runScript(this.redis, 'unregister-run', [run.shardKey], [run.tag, run.registeredMs]));
    }
    return dropped;
  }
}
