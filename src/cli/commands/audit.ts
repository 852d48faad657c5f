/**
 * `tool-receipts audit`: the operators' audit log, newest first: every
 * resolve (from this CLI or the console), bulk resolve and job retry.
 */
import { AuditLog } from '../../redis/operators/audit-log.js';
import { JSON_OPTION, expectPositionals, stringOption, type CommandContext, type CommandSpec } from '../command.js';
import { CliUsageError } from '../errors.js';
import { clip, table, terminalText, token, when, writeJson, writeLine } from '../format.js';
import { serverTimeMs } from '../../redis/runs/counts.js';

/** Arguments of {@link auditCommand}. */
export interface AuditArgs {
  /** Entries to print, newest first. */
  readonly count: number;
  /** Print the entries as a JSON array instead of a table. */
  readonly json: boolean;
}

/** Prints the newest entries of the audit log under the store's prefix. */
export async function auditCommand({ store, redis, out, args }: CommandContext<AuditArgs>): Promise<void> {
  if (redis === undefined) throw new CliUsageError('audit needs a Redis connection', 'audit');
  const entries = await new AuditLog(redis, store.prefix).read({ count: args.count });
  if (args.json) {
    writeJson(out, entries);
    return;
  }
  if (entries.length === 0) {
    writeLine(out, `No audit entries under prefix ${store.prefix}.`);
    return;
  }
  const now = await serverTimeMs(redis);
  const rows = entries.map((e) => {
    const detail = Object.entries(e.detail)
      .map(
        ([name, value]) =>
          `${name}=${name === 'skipped' && Array.isArray(value) ? value.length : typeof value === 'string' ? value : JSON.stringify(value)}`,
      )
      .join(' ');
    const receipts = e.receipts.length === 1 ? e.receipts[0]! : `${e.receipts.length} receipts`;
    return [
      when(e.atMs, now),
      token(e.actor),
      token(e.source),
      token(e.action),
      receipts,
      clip(terminalText(detail).replace(/\n/g, '\\n'), 160),
    ];
  });
  for (const line of table(['WHEN', 'WHO', 'FROM', 'WHAT', 'RECEIPTS', 'DETAIL'], rows)) writeLine(out, line);
}

/** The `audit` command. */
export const auditSpec: CommandSpec<AuditArgs> = {
  name: 'audit',
  synopsis: 'audit',
  summary: "the operators' audit log: resolves, bulk resolves, job retries",
  help: `Usage: tool-receipts audit [--count <n>] [--json] [connection options]

Prints the operators' audit log, newest first: every resolve (from this CLI
or the console), bulk resolve and job retry, with when (server clock), who,
from where, what and which receipts. The log is a capped Redis stream,
<prefix>:audit, keeping about the last 10,000 entries.

Options:
  --count <n>   entries to print (default 50)
  --json        print a JSON array of {id, atMs, actor, source, action, receipts, detail}`,
  options: { ...JSON_OPTION, count: { type: 'string' } },
  parse(values, positionals) {
    expectPositionals('audit', positionals, []);
    const text = stringOption(values, 'count') ?? '50';
    const count = /^[1-9][0-9]{0,5}$/.test(text) ? Number(text) : NaN;
    if (!Number.isSafeInteger(count))
      throw new CliUsageError(`--count must be a whole number from 1 to 999999, got ${JSON.stringify(text)}`, 'audit');
    return { count, json: values['json'] === true };
  },
  run: auditCommand,
};
