/**
 * `tool-receipts limits`: what each limit count under the prefix has used
 * and has left in its current window, per tenant, run or the whole fleet
 * (`--json` for a script); `--reset` forgets what one count's window used,
 * recorded in the audit log as `limit-reset`.
 */
import { LimitStore } from '../../limits/limit-store.js';
import { listCapCounts, type CapCount } from '../../limits/cap-counts.js';
import { limitOfCount, listLimitCounts, type LimitCount } from '../../limits/limit-counts.js';
import { JSON_OPTION, expectPositionals, stringOption, type CommandContext, type CommandSpec } from '../command.js';
import { CliUsageError } from '../errors.js';
import { table, token, when, writeJson, writeLine } from '../format.js';
import { defaultOperator } from './resolve.js';

/** Arguments of {@link limitsCommand}. */
export interface LimitsArgs {
  /** Only this tenant's counts (its tenant and run limits). */
  readonly tenantId?: string;
  /** Only the counts of the limit of this name. */
  readonly limit?: string;
  /** With `reset`: the run of a per-run limit. */
  readonly runId?: string;
  /** Reset the one count `limit` and `tenantId` (and `runId`) name, instead of listing. */
  readonly reset: boolean;
  /** Who resets, for the audit log. */
  readonly by?: string;
  readonly json: boolean;
}

/** How a count's window moves: `fixed`, `sliding`, or `bucket/<burst>`. */
const kindText = (c: LimitCount) => (c.usage.kind === 'bucket' ? `bucket/${c.usage.capacity}` : c.usage.kind);

const subjectText = (c: LimitCount | CapCount) =>
  c.per === 'global' ? '(all)' : c.per === 'tenant' ? token(c.tenantId!) : `${token(c.tenantId!)} / ${token(c.runId!)}`;

/** Lists the counts, or resets one; exit 1 when the count to reset is not there. */
export async function limitsCommand({ store, redis, out, args }: CommandContext<LimitsArgs>): Promise<number | void> {
  if (redis === undefined) throw new CliUsageError('limits needs a Redis connection', 'limits');
  const limits = new LimitStore({ redis, prefix: store.prefix });
  const filter = { ...(args.tenantId !== undefined ? { tenantId: args.tenantId } : {}), ...(args.limit ? { limit: args.limit } : {}) };
  const counts = await listLimitCounts(limits, redis, filter);
  if (args.reset) {
    const count = counts.find((c) => c.tenantId === args.tenantId && c.runId === args.runId);
    if (count === undefined) {
      const whose = args.runId !== undefined ? `run ${token(args.runId)} of ` : '';
      writeLine(
        out,
        `No count of limit ${token(args.limit!)} for ${whose}${args.tenantId !== undefined ? `tenant ${token(args.tenantId)}` : 'the fleet'} under prefix ${store.prefix}.`,
      );
      return 1;
    }
    const done = await limits.reset(limitOfCount(count), count, { actor: args.by ?? defaultOperator(), source: 'cli' });
    if (args.json) {
      writeJson(out, { ...count, usage: done.usage, usedBefore: done.usedBefore, auditId: done.auditId });
      return;
    }
    writeLine(
      out,
      `Reset limit ${token(count.name)} for ${subjectText(count)}: it had used ${done.usedBefore} of ${count.usage.max}; ${done.usage.left} left until ${new Date(done.usage.resetsAtMs).toISOString()} (audit ${done.auditId}).`,
    );
    return;
  }
  const caps = await listCapCounts(limits, redis, filter);
  if (args.json) {
    // The in-flight caps after the windows' counts, each with `cap` (its slots) where a count has `usage`.
    writeJson(out, [...counts, ...caps]);
    return;
  }
  if (counts.length === 0 && caps.length === 0) {
    writeLine(
      out,
      `No limit counts under prefix ${store.prefix}${args.tenantId !== undefined ? ` for tenant ${token(args.tenantId)}` : ''}.`,
    );
    return;
  }
  const rows = counts.map((c) => [
    token(c.name),
    c.per,
    subjectText(c),
    kindText(c),
    String(c.usage.used),
    String(c.usage.left),
    String(c.usage.max),
    c.usage.nextFreeAtMs === null ? '-' : when(c.usage.nextFreeAtMs, c.usage.nowMs),
    when(c.usage.resetsAtMs, c.usage.nowMs),
  ]);
  const head = ['LIMIT', 'PER', 'WHOSE', 'KIND', 'USED', 'LEFT', 'MAX', 'NEXT FREE', 'ALL FREE'];
  if (rows.length > 0) for (const line of table(head, rows)) writeLine(out, line);
  if (caps.length === 0) return;
  const capRows = caps.map((c) => [
    token(c.name),
    c.per,
    subjectText(c),
    `${c.cap.held}/${c.cap.concurrency}`,
    String(c.cap.waiting),
    c.cap.nextLapseMs === null ? '-' : when(c.cap.nextLapseMs, c.cap.nowMs),
  ]);
  for (const line of table(['CAP', 'PER', 'WHOSE', 'HELD', 'WAITING', 'NEXT LAPSE'], capRows)) writeLine(out, line);
}

/** The `limits` command. */
export const limitsSpec: CommandSpec<LimitsArgs> = {
  name: 'limits',
  synopsis: 'limits',
  summary: 'what each limit has used and has left, per tenant, run or fleet; reset one',
  help: `Usage: tool-receipts limits [--tenant <id>] [--limit <name>] [--json] [connection options]
       tool-receipts limits --reset --limit <name> [--tenant <id> [--run <id>]] [--by <name>] [--json]

Lists every limit count under the prefix: the limit, whose count it is (a
tenant, a run, or the whole fleet), its kind (fixed, sliding, or bucket/<burst>),
what its current window has used (committed, and held by reservations whose
calls may be about to run; one past its give-back bound is not counted),
what is left (of max, or a bucket's burst), its max, when the next committed
unit frees (NEXT FREE: a fixed window's reset, a sliding window's oldest unit
leaving it, a bucket's next unit refilled) and when all are free (ALL FREE: a
fixed window's reset), all on the Redis server's clock. A count exists once a call
was counted against it; its max and window are the ones the workers last
counted it under. The counts are read from the prefix's index of counts (at
most 1,000), never by walking the keyspace.

In-flight caps are listed in a table of their own: the cap, whose it is,
HELD (slots held by live leases, of k), WAITING (calls in line for a slot)
and NEXT LAPSE (when the earliest lease passes if its holder stops renewing),
on the Redis server's clock. With --json they follow the counts, each with
a cap field (concurrency, held, waiting, nextLapseMs) where a count has usage.

--reset forgets what the current window of one count used (reservations
still pending stay counted: their calls may be running), and records it in
the audit log (action limit-reset, with who and what was used before). Name
the count with --limit and, for a tenant's limit, --tenant; for a run's,
--tenant and --run; for a global one, neither.

Options:
  --tenant <id>   only this tenant's counts (with --reset: the tenant)
  --limit <name>  only the counts of this limit (needed with --reset)
  --run <id>      with --reset: the run of a per-run limit
  --reset         reset the named count instead of listing
  --by <name>     with --reset: who resets, for the audit log (default the OS user at this host)
  --json          print the counts (or the reset) as JSON instead`,
  options: {
    ...JSON_OPTION,
    tenant: { type: 'string' },
    limit: { type: 'string' },
    run: { type: 'string' },
    reset: { type: 'boolean' },
    by: { type: 'string' },
  },
  parse(values, positionals) {
    expectPositionals('limits', positionals, []);
    const tenantId = stringOption(values, 'tenant');
    const limit = stringOption(values, 'limit');
    const runId = stringOption(values, 'run');
    const by = stringOption(values, 'by');
    const reset = values['reset'] === true;
    for (const [name, value] of [
      ['tenant', tenantId],
      ['limit', limit],
      ['run', runId],
      ['by', by],
    ] as const) {
      if (value === '') throw new CliUsageError(`--${name} needs a value; see tool-receipts limits --help`, 'limits');
    }
    if (reset && limit === undefined) throw new CliUsageError('--reset needs --limit <name>: the count to reset', 'limits');
    if (!reset && (runId !== undefined || by !== undefined)) throw new CliUsageError('--run and --by go with --reset', 'limits');
    if (runId !== undefined && tenantId === undefined)
      throw new CliUsageError('--run needs --tenant: a run is named within its tenant', 'limits');
    return {
      ...(tenantId !== undefined ? { tenantId } : {}),
      ...(limit !== undefined ? { limit } : {}),
      ...(runId !== undefined ? { runId } : {}),
      ...(by !== undefined ? { by } : {}),
      reset,
      json: values['json'] === true,
    };
  },
  run: limitsCommand,
};
