/**
 * The index of a prefix's limit counts, so that operators' listings (the
 * CLI's `limits`, the console's counts page) read one sorted set instead of
 * walking the keyspace: every count a reserve touched, scored by how long
 * its keys are kept. Limit scripts cannot write it (it lives in a slot of
 * its own, and a script writes one hash tag), so the store adds a count
 * after a reserve, at most about twice a window per count and process.
 */
import type { ReceiptsChannel } from '../redis/receipts/channel.js';
import { limitIndexRedisKey } from './keys.js';

/** Counts a listing reads at most. */
export const LIMIT_INDEX_READ = 1_000;
/** Counts a process remembers having indexed; past it, it forgets them all and indexes again as it goes. */
const REMEMBERED = 10_000;

/** One prefix's index of limit counts. */
export class LimitIndex {
  readonly redisKey: string;
  /** State key -> until when this process last indexed it as kept. */
  private readonly indexed = new Map<string, number>();

  constructor(
    private readonly channel: ReceiptsChannel,
    prefix: string,
  ) {
    this.redisKey = limitIndexRedisKey(prefix);
  }

  /**
   * Lists `stateKey` as kept until `keptUntilMs` (server clock), unless this
   * process already did so for at least half a window more than `nowMs`;
   * drops counts whose keys were kept only until before `nowMs`. A failure
   * is left for the next reserve: the index is for reading, never counting.
   */
  async keep(stateKey: string, keptUntilMs: number, nowMs: number, windowMs: number): Promise<void> {
    const known = this.indexed.get(stateKey);
    if (known !== undefined && known - nowMs > windowMs / 2) return;
    await this.record(stateKey, keptUntilMs, nowMs);
  }

  /**
   * After a commit that kept the count's keys until `keptUntilMs`, longer
   * than its reserve said (a sliding window's or a bucket's: counted from
   * the commit): lists it that long, unless this process already listed it
   * until `usedUntilMs` at least (when every committed unit is free).
   */
  async extend(stateKey: string, keptUntilMs: number, nowMs: number, usedUntilMs: number): Promise<void> {
    const known = this.indexed.get(stateKey);
    if (known !== undefined && known >= usedUntilMs) return;
    await this.record(stateKey, keptUntilMs, nowMs);
  }

  private async record(stateKey: string, keptUntilMs: number, nowMs: number): Promise<void> {
    if (this.indexed.size >= REMEMBERED) this.indexed.clear();
    try {
      await this.channel.command('ZADD', [this.redisKey, 'GT', keptUntilMs, stateKey], this.redisKey);
      await this.channel.command('ZREMRANGEBYSCORE', [this.redisKey, '-inf', `(${nowMs}`], this.redisKey);
      this.indexed.set(stateKey, keptUntilMs);
    } catch {
      // Not indexed this time: a listing misses the count until a later reserve indexes it.
    }
  }

  /** The state keys listed, at most {@link LIMIT_INDEX_READ}, those kept longest last. */
  async list(): Promise<string[]> {
    const reply = await this.channel.command('ZRANGE', [this.redisKey, 0, LIMIT_INDEX_READ - 1], this.redisKey);
    return Array.isArray(reply) ? reply.map(String) : [];
  }
}
