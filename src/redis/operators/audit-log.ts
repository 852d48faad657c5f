/**
 * The operators' audit log: every write an operator makes on receipts (a
 * resolve, a bulk resolve, a retried job, an approval or a denial), from the CLI, the console or code, as
 * one entry of a capped Redis stream under the receipts' prefix
 * (`<prefix>:audit`). The stream is trimmed with `MAXLEN ~`, so it keeps
 * roughly the last {@link DEFAULT_AUDIT_MAX_ENTRIES} entries; the entry id
 * carries the server time of the write.
 */
import { receiptsConnection, type RedisConnection } from '../connection/connection.js';
import { validateKeyPrefix } from '../keys.js';

/** Entries kept, roughly (the stream is trimmed with `MAXLEN ~`). */
export const DEFAULT_AUDIT_MAX_ENTRIES = 10_000;

/** What an operator did. */
export type AuditAction = 'resolve' | 'bulk-resolve' | 'retry-job' | 'limit-reset' | 'approve' | 'deny';

/** One write to record. */
export interface AuditEntryInput {
  /** Who did it, as the tool that made the write knows them (a user name, a token's role and an address). */
  readonly actor: string;
  /** Where it was done from: `cli`, `console`, or an embedder's own name. */
  readonly source: string;
  readonly action: AuditAction;
  /** The receipt keys the write touched (for a bulk resolve: the ones it resolved). */
  readonly receipts: readonly string[];
  /** Anything else worth keeping, as JSON: outcome, attempts seen, a bulk action's name, filter and skipped receipts. */
  readonly detail: Readonly<Record<string, unknown>>;
}

/** One entry as read back. */
export interface AuditEntry extends AuditEntryInput {
  /** The stream entry id (`<ms>-<seq>`). */
  readonly id: string;
  /** When it was written (ms, server clock: the id's time part). */
  readonly atMs: number;
}

/** Key of the audit stream under `prefix`. */
export function auditLogRedisKey(prefix: string): string {
  return `${validateKeyPrefix(prefix)}:audit`;
}

/** Appends to and reads the audit stream of one prefix. */
export class AuditLog {
  readonly redisKey: string;

  constructor(
    private readonly redis: RedisConnection,
    readonly prefix: string,
    private readonly maxEntries = DEFAULT_AUDIT_MAX_ENTRIES,
  ) {
    this.redisKey = auditLogRedisKey(prefix);
  }

  /** Records one write; resolves to the entry id. */
  async append(entry: AuditEntryInput): Promise<string> {
    const id = await receiptsConnection(this.redis).command(
      'XADD',
      [
        this.redisKey,
        'MAXLEN',
        '~',
        this.maxEntries,
        '*',
        'actor',
        entry.actor,
        'source',
        entry.source,
        'action',
        entry.action,
        'receipts',
        JSON.stringify(entry.receipts),
        'detail',
        JSON.stringify(entry.detail),
      ],
      this.redisKey,
    );
    return String(id);
  }

  /** The newest entries first, at most `count`, older than the entry id `before` when given. */
  async read(options: { count?: number; before?: string } = {}): Promise<AuditEntry[]> {
    const count = options.count ?? 50;
    const end = options.before === undefined ? '+' : `(${options.before}`;
    const reply = (await receiptsConnection(this.redis).command('XREVRANGE', [this.redisKey, end, '-', 'COUNT', count], this.redisKey)) as [
      string,
      string[],
    ][];
    return reply.map(([id, flat]) => parseEntry(String(id), flat));
  }
}

function parseJson<T>(text: string | undefined, fallback: T): T {
  if (text === undefined) return fallback;
  try {
    return JSON.parse(text) as T;
  } catch {
    return fallback;
  }
}

function parseEntry(id: string, flat: readonly unknown[]): AuditEntry {
  const fields = new Map<string, string>();
  for (let i = 0; i + 1 < flat.length; i += 2) fields.set(String(flat[i]), String(flat[i + 1]));
  const receipts = parseJson<unknown>(fields.get('receipts'), []);
  const detail = parseJson<unknown>(fields.get('detail'), {});
  return {
    id,
    atMs: Number(id.split('-')[0]),
    actor: fields.get('actor') ?? '',
    source: fields.get('source') ?? '',
    action: (fields.get('action') ?? '') as AuditAction,
    receipts: Array.isArray(receipts) ? receipts.map(String) : [],
    detail: typeof detail === 'object' && detail !== null && !Array.isArray(detail) ? (detail as Record<string, unknown>) : {},
  };
}
