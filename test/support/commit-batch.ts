/**
 * Reads a `commit-batch-N.lua` call as it was sent (group commit): its
 * entries in order, each with its kind, its own KEYS and its arguments.
 * The tests that watch what the store sends use it to expand a batch.
 */
import { packageScripts } from '../../src/redis/scripts/scripts.js';

/** How many KEYS an entry of a kind takes: those of the script of that name, as its file name says. */
function keysOfKind(kind: string): number | undefined {
  const keys = packageScripts().find(kind)?.keys;
  return keys?.kind === 'fixed' ? keys.count : undefined;
}

/** One entry of a batch. */
export interface CommitBatchEntry {
  readonly kind: string;
  readonly keys: readonly string[];
  readonly args: readonly string[];
}

/** The entries of a batch from its KEYS and ARGV (ARGV[1] the count, then kind, count, arguments per entry). */
export function commitBatchEntries(keys: readonly string[], argv: readonly string[]): CommitBatchEntry[] {
  const entries: CommitBatchEntry[] = [];
  let at = 1;
  let key = 0;
  for (let i = 0; i < Number(argv[0]); i++) {
    const kind = argv[at]!;
    const count = Number(argv[at + 1]);
    const keyCount = keysOfKind(kind);
    if (keyCount === undefined) throw new Error(`commit-batch entry ${i + 1} is of unknown kind ${kind}`);
    entries.push({ kind, keys: keys.slice(key, key + keyCount), args: argv.slice(at + 2, at + 2 + count) });
    at += 2 + count;
    key += keyCount;
  }
  return entries;
}
