/**
 * `tool-receipts run <tenant> <run>`: one agent run's receipts, and the note
 * a resumed agent of that run would be given about them.
 */
import { runReport } from '../../operator/run-report.js';
import { JSON_OPTION, expectPositionals, type CommandContext, type CommandSpec } from '../command.js';
import {
  emptyPrefixLine,
  emptyTenantLine,
  leaseLabel,
  outcomePreview,
  stateLabel,
  table,
  terminalText,
  token,
  writeJson,
  writeLine,
} from '../format.js';

/** Arguments of {@link runCommand}. */
export interface RunArgs {
  readonly tenantId: string;
  readonly runId: string;
  /** Print one JSON object instead of a table and the note. */
  readonly json: boolean;
}

export { runReport, type RunReport } from '../../operator/run-report.js';

/** For a run with no receipt: whether its tenant, and the prefix, have none either. */
async function emptiness(
  store: CommandContext<RunArgs>['store'],
  tenantId: string,
): Promise<{ prefixEmpty: boolean; tenantEmpty: boolean }> {
  if (await store.hasReceipts({ tenantId })) return { prefixEmpty: false, tenantEmpty: false };
  return { prefixEmpty: !(await store.hasReceipts()), tenantEmpty: true };
}

/**
 * Lists a run's receipts oldest first (status, attempts, tool, lease, a
 * preview of the result or error, and each Redis key), then prints the resume
 * journal note built from them: what a resumed agent would be told about the
 * calls it made before. A run without receipts is told apart from a tenant,
 * or a prefix, without any. With `json`, prints a {@link RunReport}.
 */
export async function runCommand({ store, out, args }: CommandContext<RunArgs>): Promise<void> {
  const receipts = await store.listRun(args.tenantId, args.runId);
  const empty = receipts.length === 0 ? await emptiness(store, args.tenantId) : undefined;
  const report = runReport(args.tenantId, args.runId, receipts, empty);
  if (args.json) {
    writeJson(out, report);
    return;
  }
  const title = `tenant ${token(args.tenantId)}, run ${token(args.runId)}`;
  if (report.prefixEmpty) {
    writeLine(out, emptyPrefixLine(store.prefix));
    return;
  }
  if (report.tenantEmpty) {
    writeLine(out, emptyTenantLine(store.prefix, args.tenantId));
    return;
  }
  if (report.receipts.length === 0) {
    writeLine(out, `No receipts for ${title} under prefix ${store.prefix} (none claimed, or all expired).`);
    return;
  }
  const count = report.receipts.length === 1 ? '1 receipt' : `${report.receipts.length} receipts`;
  writeLine(out, `${count} for ${title}, oldest first:`);
  writeLine(out);
  const rows = report.receipts.map((r, i) => [
    String(i + 1),
    stateLabel(r),
    String(r.attempts),
    token(r.key.toolName),
    leaseLabel(r),
    outcomePreview(r),
  ]);
  for (const line of table(['#', 'STATUS', 'ATTEMPTS', 'TOOL', 'LEASE', 'RESULT'], rows)) writeLine(out, line);
  writeLine(out);
  writeLine(out, 'Redis keys:');
  report.receipts.forEach((r, i) => writeLine(out, `${String(i + 1).padStart(3)}  ${r.redisKey}`));
  writeLine(out);
  if (report.note === null) {
    writeLine(out, 'Resume journal note: none (no call of this run has finished or been interrupted).');
    return;
  }
  writeLine(out, 'Resume journal note (what a resumed agent of this run is told):');
  writeLine(out);
  for (const line of terminalText(report.note).split('\n')) writeLine(out, line === '' ? '' : `  ${line}`);
}

/** The `run` command. */
export const runSpec: CommandSpec<RunArgs> = {
  name: 'run',
  synopsis: 'run <tenant> <run>',
  summary: "list one run's receipts and its resume journal note",
  help: `Usage: tool-receipts run <tenant> <run> [--json] [connection options]

Lists the live receipts of one agent run, oldest first: state, attempts, tool,
lease, and a preview of the result or error, then each receipt's Redis key.
States: running, running (lease expired), ambiguous, completed, failed; an
operator's resolution shows as "(resolved)".

Then prints the resume journal note built from those receipts: the text a
resumed agent of this run is given about calls that finished (do not repeat)
and calls whose outcome is unknown (verify first).

When the run has no receipt, says whether the tenant has none either, or
nothing at all exists under the prefix (check the tenant id, or --prefix).

Options:
  --json    print {tenantId, runId, receipts, journal, note, prefixEmpty,
            tenantEmpty} as JSON instead`,
  options: { ...JSON_OPTION },
  parse(values, positionals) {
    const [tenantId, runId] = expectPositionals('run', positionals, ['tenant', 'run']) as [string, string];
    return { tenantId, runId, json: values['json'] === true };
  },
  run: runCommand,
};
