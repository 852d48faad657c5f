/**
 * The memory bench's breakdown of one pass (where a receipt's bytes go, read
 * with the doctor's own memory sample) and its two tables: bytes per call
 * beside the peer, one row per layout × server limits × result size; then
 * the parts of a receipt for the same rows.
 */
import type { Redis } from 'ioredis';
import { adviseOnMemory, type ReceiptMemorySample } from '../src/redis/operators/memory-advice.js';

/** Receipts the doctor's sample measures per pass: their mean is the breakdown. */
const SAMPLED_RECEIPTS = 32;

/** Where one pass's receipt bytes go: the doctor's sample, and what only the bench reads. */
export interface Breakdown {
  readonly sample: ReceiptMemorySample;
  /** Fields of one receipt hash. */
  readonly fields: number;
  /** Bytes of one run index member. */
  readonly memberBytes: number;
  /** Counting-set entries per receipt of one run. */
  readonly countEntries: number;
  /** The run registry's bytes per receipt. */
  readonly registryBytes: number;
}

/** One row: a layout's receipts under one setting of the limits, with one result size. */
export interface MemoryRow {
  /** `2`, `4`, `5`. */
  readonly layout: number;
  /** `default` or `raised`. */
  readonly limits: string;
  /** `small` or `realistic`. */
  readonly result: string;
  readonly resultBytes: number;
  /** The peer's bytes per record (used_memory delta / calls) for this limits × result. */
  readonly peer: number;
  /** The peer's record, one key: MEMORY USAGE and encoding. */
  readonly peerRecord: string;
  /** Ours, bytes per receipt; undefined when this release refused the layout. */
  readonly ours?: number;
  readonly breakdown?: Breakdown;
  /** Why the layout was not measured (the store refused it). */
  readonly refused?: string;
}

const memoryUsage = async (redis: Redis, key: string) => Number(await redis.call('MEMORY', 'USAGE', key, 'SAMPLES', '0'));

/** The breakdown of the receipts under `prefix`, given one receipt key and its run's index and counting set. */
export async function breakdownOf(
  redis: Redis,
  prefix: string,
  sampleKeys: { receipt: string; runIndex: string; countingSet: string },
  receipts: number,
): Promise<Breakdown> {
  const report = await adviseOnMemory(redis, { prefix, samples: SAMPLED_RECEIPTS });
  const sample = report.servers[0]?.sample;
  if (sample === undefined) throw new Error(`no receipts under ${prefix} to break down`);
  const [member] = await redis.zrange(sampleKeys.runIndex, 0, 0);
  const registry: string[] = [];
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}:runs:*`, 'COUNT', 1000);
    cursor = next;
    registry.push(...keys);
  } while (cursor !== '0');
  let registryBytes = 0;
  for (const key of registry) registryBytes += await memoryUsage(redis, key);
  return {
    sample,
    fields: await redis.hlen(sampleKeys.receipt),
    memberBytes: Buffer.byteLength(member ?? ''),
    countEntries: (await redis.zcard(sampleKeys.countingSet)) / Math.max(1, await redis.zcard(sampleKeys.runIndex)),
    registryBytes: registryBytes / receipts,
  };
}

/** One peer record's MEMORY USAGE, encoding and value length, as a cell. */
export async function peerRecordOf(redis: Redis, pattern: string): Promise<string> {
  const [, keys] = await redis.scan('0', 'MATCH', pattern, 'COUNT', 1000);
  const key = keys[0];
  if (key === undefined) return '?';
  return `${await memoryUsage(redis, key)} (${String(await redis.call('OBJECT', 'ENCODING', key))}, ${await redis.strlen(key)} B value)`;
}

/** Columns padded to their widest cell; numbers to the right. */
function aligned(header: readonly string[], rows: readonly (readonly string[])[]): string[] {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((row) => (row[i] ?? '').length)));
  const numeric = (cell: string) => /^([0-9.,]+×?|-)$/.test(cell);
  const line = (cells: readonly string[]) =>
    cells
      .map((cell, i) => (numeric(cell) ? cell.padStart(widths[i] ?? 0) : cell.padEnd(widths[i] ?? 0)))
      .join('  ')
      .trimEnd();
  return [line(header), line(widths.map((w) => '-'.repeat(w))), ...rows.map(line)];
}

/** `{ hashtable: 32 }` as `hashtable`; a mix as `listpack 30 + hashtable 2`. */
function encodings(counts: Readonly<Record<string, number>>): string {
  const names = Object.entries(counts);
  return names.length === 1 ? (names[0]?.[0] ?? '?') : names.map(([name, n]) => `${name} ${n}`).join(' + ');
}

const bytes = (value: number) => value.toFixed(0);

/** The two tables, as lines: bytes per call against the peer, then where a receipt's bytes go. */
export function memoryTables(rows: readonly MemoryRow[], goal: number): string[] {
  const head = ['layout', 'limits', 'result'];
  const who = (row: MemoryRow) => [String(row.layout), row.limits, `${row.result} ${row.resultBytes} B`];
  const perCall = rows.map((row) => {
    if (row.ours === undefined) return [...who(row), '-', bytes(row.peer), '-', '-', `not written by this release (${row.refused ?? '?'})`];
    const ratio = row.ours / row.peer;
    const sample = row.breakdown?.sample;
    return [
      ...who(row),
      bytes(row.ours),
      bytes(row.peer),
      `${ratio.toFixed(2)}×`,
      ratio <= goal ? 'met' : `missed (≤ ${bytes(row.peer * goal)} B)`,
      sample
        ? `${encodings(sample.hashEncodings)} / ${encodings(sample.runIndexEncodings)} / ${encodings(sample.countingSetEncodings)}`
        : '?',
    ];
  });
  const parts = rows.flatMap((row) => {
    const b = row.breakdown;
    if (b === undefined) return [];
    const sampled = b.sample.bytes;
    return [
      [
        ...who(row),
        sampled ? bytes(sampled.hash) : '?',
        String(b.fields),
        sampled ? bytes(sampled.runIndex) : '?',
        String(b.memberBytes),
        sampled ? bytes(sampled.countingSet) : '?',
        b.countEntries.toFixed(1),
        bytes(b.registryBytes),
        row.peerRecord,
      ],
    ];
  });
  return [
    ...aligned([...head, 'ours B', 'peer B', 'ours/peer', `goal ≤ ${goal}×`, 'encodings: hash / run index / counting set'], perCall),
    '',
    `where a receipt's bytes go (MEMORY USAGE, mean of ${SAMPLED_RECEIPTS} receipts as tool-receipts doctor samples them; a run's keys divided by its receipts):`,
    ...aligned([...head, 'hash B', 'fields', 'run index B', 'member B', 'counting set B', 'entries', 'registry B', 'peer record B'], parts),
  ];
}
