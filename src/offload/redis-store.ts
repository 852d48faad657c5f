/**
 * A `ToolResultStore` on Redis: results by session hash, with retention and a
 * bounded sweep.
 */
import { checkOptions, nullable, type OptionsSchema } from '../core/options.js';
import { scanKeys, type ReceiptsConnection, type RedisConnection } from '../redis/connection/connection.js';
import type { DurabilityOptions } from '../redis/durability/durability.js';
import { hmget, hscan } from '../redis/connection/clients/commands.js';
import { DEFAULT_KEY_PREFIX } from '../redis/keys.js';
import { connectionOption, KEYSPACE_OPTION_RULES, prefixOption, retentionOption } from '../redis/options.js';
import { ReceiptsChannel } from '../redis/receipts/channel.js';
import { keyspaceSettings } from '../redis/settings.js';
import { buildCheckpointIndex } from './char-index.js';
import { assertToolResultProvenanceMatch, decodeOwnerRecord, encodeOwnerRecord, normalizeToolResultProvenance } from './provenance.js';
import { isOffloadHashKey, lengthField, offloadHashKey, offloadScanPattern, ownerField } from './redis-keys.js';
import { assertSafeToolResultRef, isSafeToolResultRef } from './ref.js';
import { normalizeSliceOptions, toWellFormedText } from './text.js';
import type { ToolResultDeletionReport, ToolResultProvenance, ToolResultSlice, ToolResultSliceOptions, ToolResultStore } from './types.js';

/** Default lifetime of a session hash after its last put: seven days. */
export const DEFAULT_TOOL_RESULT_RETENTION_MS = 7 * 24 * 60 * 60 * 1000;

/** How many refs one sweep step examines. */
const SWEEP_BATCH = 256;

/** Options of {@link RedisToolResultStore}. */
export interface RedisToolResultStoreOptions {
  /** An ioredis `Redis` or `Cluster`. */
  redis: RedisConnection;
  /** Key prefix; letters, digits and `. _ ~ : / -` only. Default `trc`. */
  prefix?: string;
  /**
   * TTL of a session hash, reset by every put into it. Default
   * {@link DEFAULT_TOOL_RESULT_RETENTION_MS}; `null` keeps entries until deleted.
   */
  retentionMs?: number | null;
  /**
   * The workers' `durability`: a put or delete is then acknowledged only
   * once the replicas (or the AOF) have it, as the receipts that point at it
   * are, so a failover cannot leave a replayed result naming text it lost.
   */
  durability?: DurabilityOptions;
  /** The deadline of each command, as the workers' `commandTimeoutMs`; default 5,000 ms. */
  commandTimeoutMs?: number;
}

/** The rule of each {@link RedisToolResultStoreOptions} option. */
export const REDIS_TOOL_RESULT_STORE_SCHEMA: OptionsSchema<RedisToolResultStoreOptions> = {
  redis: connectionOption,
  prefix: prefixOption,
  retentionMs: nullable(retentionOption),
  durability: KEYSPACE_OPTION_RULES.durability,
  commandTimeoutMs: KEYSPACE_OPTION_RULES.commandTimeoutMs,
};

/**
 * A {@link ToolResultStore} on Redis: one hash per session, written by Lua so
 * the text and its owner are decided by one atomic step.
 *
 * Reads are cut on the server with a checkpoint index, so paging a 5 MB
 * result in 20k-character windows moves roughly the window per call, not the
 * whole text; the server still copies the stored value into the script each
 * time. Windows are in UTF-16 code units, like `String.prototype.slice`.
 *
 * Retention is a TTL on each session hash, not managed retention: nothing
 * audits or schedules deletion, so `retention` is `'none'`.
 *
 * `deleteBySession` walks every offload hash under the prefix (SCAN, then
 * HSCAN per hash), because an entry may be owned by a session other than the
 * one its ref names. Its cost grows with the whole store; on a Cluster it
 * walks every master.
 */
export class RedisToolResultStore implements ToolResultStore {
  /** TTL expiry is not managed retention. */
  readonly retention = 'none' as const;
  /** The key prefix in use. */
  readonly prefix: string;

  private readonly redis: ReceiptsConnection;
  /** Its writes go through it: the typed errors and the durability of the receipts' own writes. */
  private readonly channel: ReceiptsChannel;
  private readonly retentionMs: number;

  /** Throws `options.invalid` (or `redis.invalid_connection`) for options it cannot use. */
  constructor(options: RedisToolResultStoreOptions) {
    checkOptions('RedisToolResultStore', options, REDIS_TOOL_RESULT_STORE_SCHEMA);
    this.prefix = options.prefix ?? DEFAULT_KEY_PREFIX;
    this.channel = new ReceiptsChannel(
      options.redis,
      keyspaceSettings({ prefix: this.prefix, durability: options.durability, commandTimeoutMs: options.commandTimeoutMs }),
      'RedisToolResultStore',
    );
    this.redis = this.channel.redis;
    const retention = options.retentionMs === undefined ? DEFAULT_TOOL_RESULT_RETENTION_MS : options.retentionMs;
    this.retentionMs = retention ?? 0;
  }

  /** The Redis hash holding the entry of `ref`; see `redis-keys.ts`. */
  hashKeyOf(ref: string): string {
    return offloadHashKey(this.prefix, ref);
  }

  /** Store `content` under `ref` once; see {@link ToolResultStore.put}. */
  async put(ref: string, content: string, provenance?: ToolResultProvenance): Promise<void> {
    assertSafeToolResultRef(ref);
    const owner = provenance === undefined ? undefined : normalizeToolResultProvenance(provenance);
    const text = toWellFormedText(String(content));
    const reply = (await this.channel.write(
      'offload',
      'offload-put',
      [this.hashKeyOf(ref)],
      [ref, text, text.length, buildCheckpointIndex(text), owner === undefined ? '' : encodeOwnerRecord(owner), this.retentionMs],
    )) as [number, string | null | undefined];
    if (reply[0] === 0) return;
    const record = reply[1] ?? undefined;
    const stored = record === undefined ? undefined : decodeOwnerRecord(record);
    assertToolResultProvenanceMatch(ref, stored, owner, record !== undefined && stored === undefined);
  }

  /** Read a window of the text under `ref`; see {@link ToolResultStore.get}. */
  async get(ref: string, options?: ToolResultSliceOptions): Promise<ToolResultSlice | undefined> {
    if (!isSafeToolResultRef(ref)) return undefined;
    const { offset, limit } = normalizeSliceOptions(options);
    const reply = (await this.channel.call('offload-read', [this.hashKeyOf(ref)], [ref, offset, limit ?? -1])) as
      [number, number, number, number, string] | null;
    if (reply === null) return undefined;
    const [totalChars, start, stop, base, window] = reply;
    return { content: window.slice(start - base, stop - base), offset: start, totalChars };
  }

  /** The recorded owner, or `undefined` for unknown, unowned and unreadable. */
  async ownerOf(ref: string): Promise<ToolResultProvenance | undefined> {
    if (!isSafeToolResultRef(ref)) return undefined;
    const key = this.hashKeyOf(ref);
    const [length, record] = await this.read(key, 'hmget', () => hmget(this.redis, key, lengthField(ref), ownerField(ref)));
    if (length === null || record === null || record === undefined) return undefined;
    return decodeOwnerRecord(record);
  }

  /** Remove the entries recorded for `sessionId`; see {@link ToolResultStore.deleteBySession}. */
  async deleteBySession(sessionId: string): Promise<ToolResultDeletionReport> {
    const report = { deleted: 0, unattributable: 0 };
    const visited = new Set<string>();
    const pattern = offloadScanPattern(this.prefix);
    const pages = scanKeys(this.redis, pattern, 500)[Symbol.asyncIterator]();
    for (;;) {
      const page = await this.read(pattern, 'scan', () => pages.next());
      if (page.done === true) return report;
      for (const key of page.value) {
        if (visited.has(key) || !isOffloadHashKey(this.prefix, key)) continue;
        visited.add(key);
        await this.sweepHash(key, sessionId, report);
      }
    }
  }

  /** A plain read, its failure typed as every command of the channel is (`redis.timeout`, `redis.unavailable`). */
  private async read<T>(redisKey: string, step: string, send: () => Promise<T>): Promise<T> {
    try {
      return await send();
    } catch (error) {
      throw this.channel.typed(error, { redisKey, step });
    }
  }

  /** One hash of {@link deleteBySession}: enumerate refs, read owners, compare-and-delete. */
  private async sweepHash(key: string, sessionId: string, report: { deleted: number; unattributable: number }): Promise<void> {
    const seen = new Set<string>();
    let cursor = '0';
    do {
      const [next, flat] = await this.read(key, 'hscan', () => hscan(this.redis, key, cursor, 'n:*', SWEEP_BATCH));
      cursor = next;
      const refs: string[] = [];
      for (let i = 0; i < flat.length; i += 2) {
        const ref = (flat[i] as string).slice(2);
        if (!seen.has(ref)) {
          seen.add(ref);
          refs.push(ref);
        }
      }
      if (refs.length > 0) await this.sweepRefs(key, refs, sessionId, report);
    } while (cursor !== '0');
  }

  private async sweepRefs(
    key: string,
    refs: readonly string[],
    sessionId: string,
    report: { deleted: number; unattributable: number },
  ): Promise<void> {
    const fields = refs.flatMap((ref) => [lengthField(ref), ownerField(ref)]);
    const values = await this.read(key, 'hmget', () => hmget(this.redis, key, ...fields));
    const doomed: string[] = [];
    refs.forEach((ref, i) => {
      if (values[2 * i] === null) return; // removed since it was listed
      const record = values[2 * i + 1];
      const owner = record == null ? undefined : decodeOwnerRecord(record);
      if (owner === undefined) report.unattributable += 1;
      else if (owner.sessionId === sessionId) doomed.push(ref, record as string);
    });
    if (doomed.length > 0) report.deleted += (await this.channel.write('offload', 'offload-delete', [key], doomed)) as number;
  }
}
