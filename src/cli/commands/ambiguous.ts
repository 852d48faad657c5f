/**
 * `tool-receipts ambiguous`: every receipt whose opaque effect lost its
 * attempt, so nobody knows whether the effect happened. Each one waits for an
 * operator to check and resolve it.
 */
import type { CorruptReceiptError, ReceiptVersionError } from '../../redis/errors.js';
import type { ReceiptRecord } from '../../redis/receipts/reads/record.js';
import { commandHint, JSON_OPTION, expectPositionals, type CommandContext, type CommandSpec } from '../command.js';
import { ambiguousSinceMs, emptyPrefixLine, table, token, when, writeJson, writeLine } from '../format.js';

/** Arguments of {@link ambiguousCommand}. */
export interface AmbiguousArgs {
  /** Print a JSON array of receipt records instead of a table. */
  readonly json: boolean;
}

function since(record: ReceiptRecord): number {
  // Every listed record is ambiguous, so it has a time; the fallback only satisfies the type.
  return ambiguousSinceMs(record) ?? record.updatedMs;
}

/** What `ambiguous --json` prints. */
export interface AmbiguousReport {
  readonly prefix: string;
  /** True when no receipt at all exists under the prefix (a mistyped `--prefix`?), not merely no ambiguous one. */
  readonly prefixEmpty: boolean;
  /** The ambiguous receipts, longest-waiting first. */
  readonly receipts: ReceiptRecord[];
}

/**
 * Lists the ambiguous receipts under the store's prefix, longest-waiting
 * first: tenant, run, tool, attempts, since when, and the Redis key to pass to
 * `show` or `resolve`; when no receipt at all exists under the prefix, says
 * that instead. With `json`, prints an {@link AmbiguousReport}. Walks the
 * server's keyspace with SCAN.
 */
export async function ambiguousCommand({ store, out, args }: CommandContext<AmbiguousArgs>): Promise<void> {
  const corrupt: CorruptReceiptError[] = [];
  const newer: ReceiptVersionError[] = [];
  const scan = await store.scanAmbiguous({ onCorrupt: (e) => corrupt.push(e), onNewer: (e) => newer.push(e) });
  const records = scan.receipts.sort((a, b) => since(a) - since(b) || a.redisKey.localeCompare(b.redisKey));
  const prefixEmpty = scan.receiptsSeen === 0;
  if (args.json) {
    const report: AmbiguousReport = { prefix: store.prefix, prefixEmpty, receipts: records };
    writeJson(out, report);
    return;
  }
  for (const e of corrupt) writeLine(out, `Skipped a corrupt receipt: ${e.redisKey} (${e.why}); inspect it with redis-cli.`);
  for (const e of newer) {
    writeLine(
      out,
      `Skipped a receipt a newer release wrote: ${e.redisKey} (schema ${e.foundVersion}; this release reads up to ` +
        `${e.supportedVersion}); list it with that release's tool-receipts.`,
    );
  }
  if (prefixEmpty) {
    writeLine(out, emptyPrefixLine(store.prefix));
    return;
  }
  if (records.length === 0) {
    const seen = scan.receiptsSeen === 1 ? '1 receipt' : `${scan.receiptsSeen.toLocaleString('en-US')} receipts`;
    writeLine(out, `No ambiguous receipts under prefix ${store.prefix} (${seen}, none ambiguous).`);
    return;
  }
  const rows = records.map((r) => [
    token(r.key.tenantId),
    token(r.key.runId),
    token(r.key.toolName),
    String(r.attempts),
    // Only what still needs a person is listed: a reconcile, if any, could not tell.
    r.reconciled?.verdict === 'unknown' && r.reconciled.attempt === r.attempts ? 'unknown' : '-',
    when(since(r), r.readAtMs),
    r.redisKey,
  ]);
  for (const line of table(['TENANT', 'RUN', 'TOOL', 'ATTEMPTS', 'RECONCILED', 'SINCE', 'REDIS KEY'], rows)) writeLine(out, line);
  writeLine(out);
  const count = records.length === 1 ? '1 ambiguous receipt' : `${records.length} ambiguous receipts`;
  writeLine(out, `${count}. Look at one with: ${commandHint(store, 'show', '<redis key>')}`);
}

/** The `ambiguous` command. */
export const ambiguousSpec: CommandSpec<AmbiguousArgs> = {
  name: 'ambiguous',
  synopsis: 'ambiguous',
  summary: 'list receipts whose effect may or may not have happened',
  help: `Usage: tool-receipts ambiguous [--json] [connection options]

Lists every ambiguous receipt under the prefix: an opaque tool call whose
attempt lost its lease before it completed, so its side effect may or may not
have happened, and which nothing settled on its own (no reconcile is under
way; RECONCILED says unknown when the tool's reconcile could not tell). Claims of such a call refuse to run it until an operator checks
the effect and settles the receipt with \`tool-receipts resolve\`.

Columns: tenant, run, tool, attempts, reconciled, since when it is ambiguous (server
clock), and the Redis key to pass to \`show\` or \`resolve\` (quote it: it
holds { | and }). Oldest first. Finds receipts with SCAN over the whole server.
A receipt hash that is corrupt (no valid status, or a key of another type), or
that a newer release of the package wrote, is skipped with a line naming it
(not in --json output). When no receipt at all
exists under the prefix, it says so ("No receipts at all under prefix ...:
check --prefix"), apart from "No ambiguous receipts".

Options:
  --json    print {prefix, prefixEmpty, receipts} instead: receipts is the
            array of receipt records, prefixEmpty true when no receipt at
            all exists under the prefix`,
  options: { ...JSON_OPTION },
  parse(values, positionals) {
    expectPositionals('ambiguous', positionals, []);
    return { json: values['json'] === true };
  },
  run: ambiguousCommand,
};
