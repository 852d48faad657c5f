/**
 * `tool-receipts stats`: how many receipts there are under a prefix (or of
 * one tenant), by status and effect, and how many are ambiguous and since
 * when, and how many calls await approval (from the prefix's index of them).
 * Exact, from each run's counting set; `--scan` reads every receipt
 * instead, and `--rebuild` rebuilds the counting sets from the receipts.
 */
import { countPendingApprovals, type PendingApprovalCount } from '../../approvals/read.js';
import type { ReceiptStats } from '../../redis/runs/counts.js';
import type { RebuildSummary } from '../../redis/runs/count-scan.js';
import { JSON_OPTION, expectPositionals, stringOption, type CommandContext, type CommandSpec } from '../command.js';
import { CliUsageError } from '../errors.js';
import { emptyPrefixLine, emptyTenantLine, relative, table, token, when, writeJson, writeLine } from '../format.js';

/** Arguments of {@link statsCommand}. */
export interface StatsArgs {
  /** Count only this tenant's receipts. */
  readonly tenantId?: string;
  /** Print the {@link ReceiptStats} as JSON instead of a table. */
  readonly json: boolean;
  /** Count by reading every receipt (SCAN) instead of the counting sets. */
  readonly scan?: boolean;
  /** Rebuild the counting sets from the receipts first. */
  readonly rebuild?: boolean;
}

const plural = (n: number, one: string, many = `${one}s`) => `${n.toLocaleString('en-US')} ${n === 1 ? one : many}`;

/** What `stats --json` prints: the counts, and whether the scope holds anything at all. */
export type StatsReport = ReceiptStats & {
  /** True when no receipt at all exists under the prefix (a mistyped `--prefix`?). */
  readonly prefixEmpty: boolean;
  /** With `--tenant`: true when the tenant has no receipt under the prefix (a mistyped tenant?). */
  readonly tenantEmpty?: boolean;
  /** With `--rebuild`: what the rebuild did. */
  readonly rebuilt?: RebuildSummary;
  /**
   * Calls awaiting approval (of the tenant, with `--tenant`), from the
   * prefix's index; expired and decided entries are not counted. Such a call
   * has not run: the counting sets do not count it by status.
   */
  readonly awaitingApproval: Pick<PendingApprovalCount, 'count' | 'soonestExpiresAtMs' | 'complete'>;
};

/** The line about calls awaiting approval; nothing when none does. */
function writeApprovalsLine(out: CommandContext<StatsArgs>['out'], pending: PendingApprovalCount): void {
  if (pending.count === 0) return;
  const atLeast = pending.complete ? '' : 'at least ';
  const soonest =
    pending.soonestExpiresAtMs === null ? '' : `, the soonest expires ${relative(pending.soonestExpiresAtMs, pending.readAtMs)}`;
  writeLine(
    out,
    `Awaiting approval: ${atLeast}${pending.count.toLocaleString('en-US')}${soonest}. List them with: tool-receipts approvals`,
  );
}

/** Whether the prefix, and the tenant asked about, hold anything at all, given counts of the scope. */
async function emptiness(
  store: CommandContext<StatsArgs>['store'],
  stats: ReceiptStats,
): Promise<{ prefixEmpty: boolean; tenantEmpty?: boolean }> {
  // A count that fell back to reading every receipt under the prefix, for want of any registered run, and found none: nothing is there.
  if (stats.tenantId === undefined)
    return { prefixEmpty: stats.total === 0 && (stats.scanReason === 'no-registered-runs' || !(await store.hasReceipts())) };
  if (stats.total > 0) return { prefixEmpty: false, tenantEmpty: false };
  // A tenant with no registered run was just counted by a walk that found nothing: no need to look again.
  const tenantEmpty = stats.scanReason === 'no-registered-runs' || !(await store.hasReceipts({ tenantId: stats.tenantId }));
  return { prefixEmpty: tenantEmpty && !(await store.hasReceipts()), tenantEmpty };
}

/** Prints the counts of the store's receipts (or one tenant's). */
export async function statsCommand({ store, redis, out, args }: CommandContext<StatsArgs>): Promise<void> {
  if (redis === undefined) throw new CliUsageError('stats needs a Redis connection', 'stats');
  const tenant = args.tenantId !== undefined ? { tenantId: args.tenantId } : {};
  const rebuilt = args.rebuild ? await store.rebuildCounts(tenant) : undefined;
  const stats: ReceiptStats = await store.stats({ ...tenant, scan: args.scan === true });
  const pending = await countPendingApprovals({ redis, prefix: store.prefix, ...tenant });
  const empty = await emptiness(store, stats);
  if (args.json) {
    const { count, soonestExpiresAtMs, complete } = pending;
    const awaitingApproval = { count, soonestExpiresAtMs, complete };
    const report: StatsReport = { ...stats, ...empty, ...(rebuilt ? { rebuilt } : {}), awaitingApproval };
    writeJson(out, report);
    return;
  }
  if (rebuilt) {
    const skipped = rebuilt.corrupt > 0 ? `; ${plural(rebuilt.corrupt, 'key')} skipped as not well-formed receipts` : '';
    writeLine(out, `Rebuilt the counting sets of ${plural(rebuilt.runs, 'run')} (${plural(rebuilt.receipts, 'receipt')})${skipped}.`);
  }
  const scope = `prefix ${store.prefix}${stats.tenantId !== undefined ? `, tenant ${token(stats.tenantId)}` : ''}`;
  const fellBack = stats.scanReason === 'no-registered-runs';
  if (stats.total === 0) {
    if (fellBack) {
      const whose = stats.tenantId !== undefined ? `of tenant ${token(stats.tenantId)} ` : '';
      writeLine(
        out,
        `No run ${whose}is registered under prefix ${store.prefix}, so stats read every receipt in scope (a SCAN over the whole keyspace) and found none.`,
      );
    }
    if (empty.prefixEmpty) writeLine(out, emptyPrefixLine(store.prefix));
    else if (empty.tenantEmpty === true && stats.tenantId !== undefined) writeLine(out, emptyTenantLine(store.prefix, stats.tenantId));
    else writeLine(out, `No receipts under ${scope}.`);
    writeApprovalsLine(out, pending);
    return;
  }
  writeLine(out, `${plural(stats.total, 'receipt')} in ${plural(stats.runs, 'run')} under ${scope}:`);
  if (fellBack) {
    writeLine(out, 'Counted by reading every receipt: no run in scope is registered (receipts an earlier version wrote?);');
    writeLine(out, 'tool-receipts stats --rebuild counts them once and makes the next count fast.');
  }
  writeLine(out);
  const rows = stats.byStatusAndEffect.map((c) => [c.status, c.effect, c.count.toLocaleString('en-US')]);
  for (const line of table(['STATUS', 'EFFECT', 'RECEIPTS'], rows)) writeLine(out, line);
  writeLine(out);
  if (stats.ambiguous === 0) writeLine(out, 'Ambiguous: none.');
  else {
    writeLine(
      out,
      `Ambiguous: ${stats.ambiguous.toLocaleString('en-US')}, the oldest since ${when(stats.oldestAmbiguousSinceMs, stats.readAtMs)}.`,
    );
    writeLine(out, 'List them with: tool-receipts ambiguous');
  }
  writeApprovalsLine(out, pending);
}

/** The `stats` command. */
export const statsSpec: CommandSpec<StatsArgs> = {
  name: 'stats',
  synopsis: 'stats',
  summary: 'count receipts by status and effect, and the ambiguous ones',
  help: `Usage: tool-receipts stats [--tenant <id>] [--scan | --rebuild] [--json] [connection options]

Counts every live receipt under the prefix (or of one tenant): by status
(running, completed, failed) and effect (opaque, resumable), the number of
runs they belong to, and how many are ambiguous, with the time the oldest of
them became ambiguous (server clock), and how many calls await approval
(with when the soonest expires), from the prefix's index of them: expired
and decided entries are dropped, not counted, and at most 10,000 entries are
read (past that it says "at least"). A call awaiting approval has not run:
the counting sets do not count it by status. The counts are exact and cheap: every
transition keeps its run's counting set up to date, and the command reads
one small script's answer per registered run, never a receipt.

Receipts an earlier version wrote have no counting set: while no run in
scope is registered (a tenant with no receipt, or a mistyped one, included),
stats reads every receipt in scope by itself, and says so;
--rebuild counts them once (and forgets receipts deleted by hand), and --scan
always counts by reading every receipt. Both walk the keyspace with SCAN: slow on millions of keys.

Options:
  --tenant <id>   count only this tenant's receipts
  --scan          count by reading every receipt instead of the counting sets
  --rebuild       rebuild the counting sets from the receipts, then count
  --json          print the counts as one JSON object instead, with
                  prefixEmpty (no receipt at all under the prefix), with
                  --tenant tenantEmpty, and scanReason when it read every
                  receipt ('asked', or 'no-registered-runs'), and
                  awaitingApproval { count, soonestExpiresAtMs, complete }

When nothing at all exists under the prefix, or of the tenant, it says so
(check --prefix, or the tenant id) rather than just "No receipts".`,
  options: { ...JSON_OPTION, tenant: { type: 'string' }, scan: { type: 'boolean' }, rebuild: { type: 'boolean' } },
  parse(values, positionals) {
    expectPositionals('stats', positionals, []);
    const tenantId = stringOption(values, 'tenant');
    if (tenantId === '') throw new CliUsageError('--tenant needs a tenant id; see tool-receipts stats --help', 'stats');
    if (values['scan'] === true && values['rebuild'] === true) {
      throw new CliUsageError('--scan and --rebuild do not go together: --rebuild already reads every receipt', 'stats');
    }
    return {
      ...(tenantId !== undefined ? { tenantId } : {}),
      json: values['json'] === true,
      ...(values['scan'] === true ? { scan: true } : {}),
      ...(values['rebuild'] === true ? { rebuild: true } : {}),
    };
  },
  run: statsCommand,
};
