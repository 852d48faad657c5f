/**
 * `tool-receipts resolve <redisKey> --attempts <n> [--epoch <e>] (--completed [--result <json>] | --failed --error <text>)`:
 * an operator settles an ambiguous receipt after checking whether its effect
 * happened.
 */
import os from 'node:os';
import type { ReceiptRecord } from '../../redis/receipts/reads/record.js';
import { RESOLUTION_BY_MAX, RESOLUTION_NOTE_MAX, type Resolution } from '../../redis/receipts/store.js';
import {
  commandHint,
  JSON_OPTION,
  expectPositionals,
  stringOption,
  type CommandContext,
  type CommandSpec,
  type OptionValues,
  wholeNumberOption,
} from '../command.js';
import { CliUsageError } from '../errors.js';
import { duration, leaseLabel, outcomePreview, stateLabel, table, token, when, writeJson, writeLine } from '../format.js';
import type { JobRetryReport } from '../../bullmq/sweep/retry-jobs.js';
import { AuditLog } from '../../redis/operators/audit-log.js';
import { resolveReceipt } from '../../operator/resolve.js';

/** Arguments of {@link resolveCommand}. */
export interface ResolveArgs {
  /** The receipt's Redis key. */
  readonly redisKey: string;
  /**
   * The verdict, fenced on `attemptsSeen`: the attempts the operator saw when
   * deciding. The store refuses it if the receipt has moved on since.
   */
  readonly resolution: Resolution;
  /** Print a JSON object with the receipt before and after instead of text. */
  readonly json: boolean;
  /** Then retry the failed BullMQ jobs recorded on the receipt, so their turns finish. */
  readonly retryJob?: boolean;
}

/** What `resolve --json` prints. */
export interface ResolveReport {
  readonly redisKey: string;
  readonly outcome: Resolution['outcome'];
  readonly attemptsSeen: number;
  /** The receipt as read just before resolving. */
  readonly before: ReceiptRecord;
  /** The receipt as read just after; `null` if it was already gone. */
  readonly after: ReceiptRecord | null;
  /** With `--retry-job`: what was done with each job recorded on the receipt. */
  readonly jobs?: JobRetryReport[];
  /** With `--retry-job`, when no job was retried although the resolve landed: why. */
  readonly jobsNotRetried?: string;
}

interface Change {
  readonly field: string;
  readonly before: string;
  readonly after: string;
}

/** The fields an operator cares about that differ between two reads of a receipt. */
export function receiptChanges(before: ReceiptRecord, after: ReceiptRecord | null): Change[] {
  const view = (r: ReceiptRecord | null): Record<string, string> =>
    r === null
      ? { state: '(gone)' }
      : {
          state: stateLabel(r),
          attempts: String(r.attempts),
          lease: leaseLabel(r),
          result: r.status === 'completed' ? outcomePreview(r, 60) : '-',
          error: r.error === null ? '-' : token(r.error),
          settled: when(r.completedMs, r.readAtMs),
          resolved: when(r.resolvedMs, r.readAtMs),
          expires: r.ttlMs < 0 ? 'never' : `in ${duration(r.ttlMs)}`,
        };
  const a = view(before);
  const b = view(after);
  const names = [...new Set([...Object.keys(a), ...Object.keys(b)])];
  return names.filter((n) => a[n] !== b[n]).map((field) => ({ field, before: a[field] ?? '-', after: b[field] ?? '-' }));
}

/**
 * Settles an ambiguous receipt as the operator decided: `completed` with the
 * result the effect is known to have produced (later claims replay it), or
 * `failed` (the next claim runs the call again as the next attempt). The write
 * is fenced on the attempts the operator saw, never on a fresh read, so a
 * receipt that moved on is left alone. Prints what changed. Throws
 * {@link ResolveRefusedError} when the store refused (fenced out, or not
 * ambiguous) and `ReceiptNotFoundError` when there is no receipt.
 */
export async function resolveCommand({ store, redis, out, args }: CommandContext<ResolveArgs>): Promise<void> {
  if (args.retryJob && redis === undefined)
    throw new CliUsageError('--retry-job needs a Redis connection for the BullMQ queues', 'resolve');
  const seen = args.resolution.attemptsSeen;
  const { before, after, jobs, jobsNotRetried } = await resolveReceipt(store, args.redisKey, args.resolution, {
    lookAgain: `; look again with ${commandHint(store, 'show', args.redisKey)}`,
    ...(redis !== undefined
      ? { audit: { log: new AuditLog(redis, store.prefix), actor: args.resolution.by ?? defaultOperator(), source: 'cli' } }
      : {}),
    ...(args.retryJob && redis !== undefined ? { retryJobsOn: redis } : {}),
  });
  if (args.json) {
    const report: ResolveReport = {
      redisKey: args.redisKey,
      outcome: args.resolution.outcome,
      attemptsSeen: seen,
      before,
      after,
      ...(jobs ? { jobs } : {}),
      ...(jobsNotRetried !== undefined ? { jobsNotRetried } : {}),
    };
    writeJson(out, report);
    return;
  }
  writeLine(out, `Resolved ${args.redisKey} as ${args.resolution.outcome} at attempt ${seen}.`);
  const entry = after?.history.at(-1);
  if (entry !== undefined && entry.what.startsWith('resolve.')) {
    writeLine(
      out,
      `Recorded in the receipt's history as entry ${entry.seq}, by ${token(entry.by)}${entry.note === null ? '' : `, with your note`}.`,
    );
  }
  writeLine(out);
  const rows = receiptChanges(before, after).map((c) => [c.field, c.before, c.after]);
  for (const line of table(['FIELD', 'BEFORE', 'AFTER'], rows)) writeLine(out, line);
  writeLine(out);
  writeLine(
    out,
    args.resolution.outcome === 'completed'
      ? 'Later claims of this call replay the recorded result instead of running it.'
      : `The next claim of this call runs it again, as attempt ${seen + 1}.`,
  );
  if (jobs) writeJobRetries(out, jobs);
  if (jobsNotRetried !== undefined) {
    writeLine(out);
    writeLine(out, `${jobsNotRetried[0]!.toUpperCase()}${jobsNotRetried.slice(1)}.`);
  }
}

/** One line per job recorded on the receipt: retried, or the state it was left in. */
function writeJobRetries(out: CommandContext<unknown>['out'], jobs: readonly JobRetryReport[]): void {
  writeLine(out);
  if (jobs.length === 0) writeLine(out, 'No BullMQ job is recorded on this receipt; nothing was retried.');
  for (const { job, action } of jobs) {
    const name = `job ${token(job.id)} of queue ${token(job.queue)} (prefix ${token(job.prefix)})`;
    writeLine(
      out,
      action === 'retried'
        ? `Retried ${name}: it replays this call and runs the rest of its turn.`
        : `Left ${name} alone: it is ${action}.`,
    );
  }
}

function parseAttempts(text: string | undefined): number {
  if (text === undefined) {
    throw new CliUsageError(
      'resolve needs --attempts <n>: the attempts you saw on the receipt (tool-receipts show prints them)',
      'resolve',
    );
  }
  return wholeNumberOption({ attempts: text }, 'attempts', 1, 'resolve')!;
}

function parseEpoch(text: string | undefined): { epochSeen?: string } {
  if (text === undefined) return {};
  if (!/^[A-Za-z0-9_-]{1,64}$/.test(text)) {
    throw new CliUsageError(
      `--epoch must be the epoch show prints for the receipt (letters, digits, - and _), got ${JSON.stringify(text)}`,
      'resolve',
    );
  }
  return { epochSeen: text };
}

/** Who resolves when `--by` is not given: the OS user at this host. */
export function defaultOperator(): string {
  let user: string;
  try {
    user = os.userInfo().username;
  } catch {
    user = process.env['USER'] ?? process.env['USERNAME'] ?? 'operator';
  }
  return `${user}@${os.hostname()}`.slice(0, RESOLUTION_BY_MAX);
}

function parseText(values: OptionValues, name: 'by' | 'note', max: number): string | undefined {
  const text = stringOption(values, name);
  if (text === undefined) return undefined;
  if (text.trim() === '' || text.length > max) {
    throw new CliUsageError(
      `--${name} must be non-blank text of at most ${max} characters, got ${text.trim() === '' ? 'blank text' : `${text.length} characters`}`,
      'resolve',
    );
  }
  return text;
}

function parseResolution(values: OptionValues): Resolution {
  const attemptsSeen = parseAttempts(stringOption(values, 'attempts'));
  const given = {
    ...parseEpoch(stringOption(values, 'epoch')),
    by: parseText(values, 'by', RESOLUTION_BY_MAX) ?? defaultOperator(),
    ...(stringOption(values, 'note') !== undefined ? { note: parseText(values, 'note', RESOLUTION_NOTE_MAX)! } : {}),
  };
  const completed = values['completed'] === true;
  const failed = values['failed'] === true;
  const resultText = stringOption(values, 'result');
  const error = stringOption(values, 'error');
  if (completed === failed) {
    throw new CliUsageError('resolve needs exactly one of --completed or --failed', 'resolve');
  }
  if (completed) {
    if (error !== undefined) throw new CliUsageError('--error goes with --failed, not --completed', 'resolve');
    if (resultText === undefined) return { attemptsSeen, ...given, outcome: 'completed', result: undefined };
    let result: unknown;
    try {
      result = JSON.parse(resultText);
    } catch {
      throw new CliUsageError(
        `--result must be JSON, got ${JSON.stringify(resultText)} (write a string with its quotes: --result '"sent"')`,
        'resolve',
      );
    }
    return { attemptsSeen, ...given, outcome: 'completed', result };
  }
  if (resultText !== undefined) throw new CliUsageError('--result goes with --completed, not --failed', 'resolve');
  if (error === undefined || error.trim() === '') {
    throw new CliUsageError('--failed needs --error <text>: say what you found, it is stored on the receipt', 'resolve');
  }
  return { attemptsSeen, ...given, outcome: 'failed', error };
}

/** The `resolve` command. */
export const resolveSpec: CommandSpec<ResolveArgs> = {
  name: 'resolve',
  summary: 'settle an ambiguous receipt as completed or failed',
  synopsis: 'resolve <redisKey> ...',
  help: `Usage: tool-receipts resolve <redisKey> --attempts <n> [--epoch <e>] --completed [--result <json>] [--by <name>] [--note <text>]
       tool-receipts resolve <redisKey> --attempts <n> [--epoch <e>] --failed --error <text> [--by <name>] [--note <text>]

Settles an ambiguous receipt once you have checked whether its effect happened
(the email went out, the charge went through...). Prints the fields that
changed, and records your verdict (who, when, what, which attempt, your note)
in the receipt's history, which later attempts keep. Exits 1 without writing
anything, saying exactly what differs, when the receipt is gone, the attempt
you typed is not the receipt's (never reached, or more attempts started
since), the epoch you typed never was this receipt's or is of a lifetime that
ended, the attempt is already settled, or it is not ambiguous (its lease is
still live, it is resumable and no claim found it ambiguous, or it is
contested: its attempt heartbeated after a claim reported it ambiguous and may
still settle late).

Options:
  --attempts <n>    the attempts you saw on the receipt (show prints them).
                    The write is fenced on it: if the original attempt settled
                    late or someone else resolved it meanwhile, it is refused.
  --epoch <e>       the epoch you saw (show prints it, and the resolve commands
                    it suggests include it). Optional but recommended: with it,
                    your verdict cannot settle a later lifetime of the same
                    call (the receipt expired and the call was claimed again)
                    that happens to be ambiguous at the same attempt. Write
                    --epoch=<e> when the epoch begins with '-'. A refusal
                    tells an epoch that never was this receipt's (mistyped,
                    or another receipt's) from one of a lifetime that ended.
  --completed       the effect happened: later claims of the call replay the
                    result instead of running it
  --result <json>   with --completed, the result they replay, as JSON (quote a
                    string: --result '"sent"'); without it, no result value
  --failed          the effect did not happen: the next claim runs the call
                    again as attempt n+1
  --error <text>    with --failed (required), what you found; stored on the
                    receipt
  --by <name>       who gives the verdict, recorded in the history (default
                    <OS user>@<host>; at most 200 characters)
  --note <text>     why, recorded in the history (at most 1000 characters)
  --retry-job       then retry the BullMQ jobs recorded on the receipt (the
                    job of each attempt) that failed: each replays this call
                    and runs the rest of its turn. Other jobs are left alone.
  --json            print {redisKey, outcome, attemptsSeen, before, after, jobs?}`,
  options: {
    ...JSON_OPTION,
    attempts: { type: 'string' },
    epoch: { type: 'string' },
    completed: { type: 'boolean' },
    failed: { type: 'boolean' },
    result: { type: 'string' },
    error: { type: 'string' },
    by: { type: 'string' },
    note: { type: 'string' },
    'retry-job': { type: 'boolean' },
  },
  parse(values, positionals) {
    const [redisKey] = expectPositionals('resolve', positionals, ['redisKey']) as [string];
    return { redisKey, resolution: parseResolution(values), json: values['json'] === true, retryJob: values['retry-job'] === true };
  },
  run: resolveCommand,
};
