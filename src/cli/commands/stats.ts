/**
 * `tool-receipts stats`: how many receipts there are under a prefix (or of
 * one tenant), by status and effect, and how many are ambiguous and since
 * when. Exact: every receipt is read, on the server.
 */
import type { ReceiptStats } from '../../redis/receipt-stats.js';
import { JSON_OPTION, expectPositionals, stringOption, type CommandContext, type CommandSpec } from '../command.js';
import { CliUsageError } from '../errors.js';
import { table, token, when, writeJson, writeLine } from '../format.js';

/** Arguments of {@link statsCommand}. */
export interface StatsArgs {
  /** Count only this tenant's receipts. */
  readonly tenantId?: string;
  /** Print the {@link ReceiptStats} as JSON instead of a table. */
  readonly json: boolean;
}

const plural = (n: number, one: string, many = `${one}s`) => `${n.toLocaleString('en-US')} ${n === 1 ? one : many}`;

/** Prints the counts of the store's receipts (or one tenant's). */
export async function statsCommand({ store, out, args }: CommandContext<StatsArgs>): Promise<void> {
  const stats: ReceiptStats = await store.stats(args.tenantId !== undefined ? { tenantId: args.tenantId } : {});
  if (args.json) {
    writeJson(out, stats);
    return;
  }
  const scope = `prefix ${store.prefix}${stats.tenantId !== undefined ? `, tenant ${token(stats.tenantId)}` : ''}`;
  if (stats.total === 0) {
    writeLine(out, `No receipts under ${scope}.`);
    return;
  }
  writeLine(out, `${plural(stats.total, 'receipt')} in ${plural(stats.runs, 'run')} under ${scope}:`);
  writeLine(out);
  const rows = stats.byStatusAndEffect.map((c) => [c.status, c.effect, c.count.toLocaleString('en-US')]);
  for (const line of table(['STATUS', 'EFFECT', 'RECEIPTS'], rows)) writeLine(out, line);
  writeLine(out);
  if (stats.ambiguous === 0) {
    writeLine(out, 'Ambiguous: none.');
    return;
  }
  writeLine(out, `Ambiguous: ${stats.ambiguous.toLocaleString('en-US')}, the oldest since ${when(stats.oldestAmbiguousSinceMs, stats.readAtMs)}.`);
  writeLine(out, 'List them with: tool-receipts ambiguous');
}

/** The `stats` command. */
export const statsSpec: CommandSpec<StatsArgs> = {
  name: 'stats',
  synopsis: 'stats',
  summary: 'count receipts by status and effect, and the ambiguous ones',
  help: `Usage: tool-receipts stats [--tenant <id>] [--json] [connection options]

Counts every live receipt under the prefix (or of one tenant): by status
(running, completed, failed) and effect (opaque, resumable), the number of
runs they belong to, and how many are ambiguous, with the time the oldest of
them became ambiguous (server clock). The counts are exact: the command finds
the runs with SCAN and reads each run's receipts on the server with one
script that returns only counts.

Options:
  --tenant <id>   count only this tenant's receipts
  --json          print the counts as one JSON object instead`,
  options: { ...JSON_OPTION, tenant: { type: 'string' } },
  parse(values, positionals) {
    expectPositionals('stats', positionals, []);
    const tenantId = stringOption(values, 'tenant');
    if (tenantId === '') throw new CliUsageError('--tenant needs a tenant id; see tool-receipts stats --help', 'stats');
    return { ...(tenantId !== undefined ? { tenantId } : {}), json: values['json'] === true };
  },
  run: statsCommand,
};
