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
 * registered. Each process re-registers a run at most once a minute. An entry
 * goes only when its run's counting set is gone and it was registered more
 * than {@link REGISTRATION_GRACE_MS} ago: the grace covers a registration
 * whose claim has not landed yet, so pruning can never drop a run that still
 * has receipts.
 */
import { receiptsConnection, type ReceiptsConnection, type RedisConnection } from '../connection/connection.js';
import { zrangeWithScores } from '../connection/clients/commands.js';
import { encodeKeyComponent } from '../keys.js';
import { runScript } from '../scripts/scripts.js';

/** Shards per prefix. Fixed: every process of a fleet must agree on it. */
export const RUN_REGISTRY_SHARDS = 16;

/** How old an entry whose counting set is gone must be before it is dropped (1 h). */
export const REGISTRATION_GRACE_MS = 3_600_000;

/** How long a process trusts its own registration of a run before it sends it again (1 min). */
const REREGISTER_AFTER_MS = 60_000;

/** Runs a process remembers registering; past it, the memory starts over (a few more ZADDs, nothing lost). */
const REMEMBERED_RUNS = 10_000;

/** One registered run. */
export interface RegisteredRun {
  /** The run's hash-tag text, `<tenant>|<run>` percent-encoded (what goes between the braces of its keys). */
  readonly tag: string;
  /** When it was last registered, in ms of the server clock. */
  readonly registeredMs: number;
  /** The registry shard holding it. */
  readonly shardKey: string;
}

/** FNV-1a over UTF-16 code units: cheap, and the same in every process. */
function shardOf(text: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return (hash >>> 0) % RUN_REGISTRY_SHARDS;
}

/** Key of registry shard `n` under `prefix`. */
export function runRegistryRedisKey(prefix: string, shard: number): string {
  return `${prefix}:runs:{runs-${shard}}`;
}

/** The registry shard that holds `tenantId`'s runs. */
export function runRegistryShardKey(prefix: string, tenantId: string): string {
  return runRegistryRedisKey(prefix, shardOf(encodeKeyComponent(tenantId)));
}

/** A member that can be a run's hash tag: two encoded components (no decoding: stats reads thousands). */
const TAG = /^[A-Za-z0-9._~%-]*\|[A-Za-z0-9._~%-]*$/;

/** Entries read per ZRANGE, so a registry of millions of runs never arrives as one reply. */
const PAGE = 5_000;

/** Registers runs under one prefix and lists them. */
export class RunRegistry {
  private readonly registered = new Map<string, { at: number; done: Promise<void> }>();

  private readonly redis: ReceiptsConnection;

  constructor(
    redis: RedisConnection,
    readonly prefix: string,
  ) {
    this.redis = receiptsConnection(redis);
  }

  /**
   * Makes sure the run is registered before a claim may create its first
   * receipt. Resolves at once when this process registered it in the last
   * minute (unless `force`); concurrent calls for one run share one write.
   */
  register(tenantId: string, runId: string, force = false): Promise<void> {
    const tenant = encodeKeyComponent(tenantId);
    const tag = `${tenant}|${encodeKeyComponent(runId)}`;
    const now = Date.now();
    const known = this.registered.get(tag);
    if (!force && known !== undefined && now - known.at < REREGISTER_AFTER_MS) return known.done;
    if (this.registered.size >= REMEMBERED_RUNS) this.registered.clear();
    const done = runScript(this.redis, 'register-run', [runRegistryRedisKey(this.prefix, shardOf(tenant))], [tag]).then(() => undefined);
    this.registered.set(tag, { at: now, done });
    // A failed write is forgotten, so the next claim of the run tries again.
    done.catch(() => this.registered.get(tag)?.done === done && this.registered.delete(tag));
    return done;
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
