/**
 * `tool-receipts show <redisKey>`: every field of one receipt.
 */
import { idempotencyKeyFor } from '../../core/identity.js';
import {
  isAmbiguousRecord,
  isContestedRecord,
  RECEIPT_HISTORY_CAP,
  type AttemptJob,
  type ReceiptRecord,
} from '../../redis/receipts/reads/record.js';
import { commandHint, JSON_OPTION, expectPositionals, type CommandContext, type CommandSpec } from '../command.js';
import { readReceipt } from '../../operator/read-receipt.js';
import { approvalFacts } from '../../operator/labels.js';
import {
  ambiguousSinceMs,
  clip,
  compactJson,
  duration,
  fields,
  isoTime,
  leaseLabel,
  stateLabel,
  terminalText,
  token,
  when,
  writeJson,
  writeLine,
  type Output,
} from '../format.js';
import { parseReceiptRedisKey } from '../receipt-key.js';
import type { ReceiptStore } from '../../redis/receipts/store.js';

/** Arguments of {@link showCommand}. */
export interface ShowArgs {
  /** The receipt's Redis key, as `ambiguous` or `run` print it. */
  readonly redisKey: string;
  /** Print the `ReceiptRecord` as JSON instead of a field list. */
  readonly json: boolean;
}

/** What `show --json` prints: the receipt record, and what `show` works out from it. */
export interface ShownReceipt extends ReceiptRecord {
  /** The call's `ctx.idempotencyKey`: the key its tool sent the provider, the same for every attempt. */
  readonly idempotencyKey: string;
  /** Since when it is (or was, for one settled late or resolved) ambiguous, as `ambiguous` lists it; `null` if never. */
  readonly ambiguousSinceMs: number | null;
}

export { readReceipt } from '../../operator/read-receipt.js';

/** The field list `show` prints for a record, one `[label, value]` per line. */
export function receiptFields(record: ReceiptRecord): [string, string][] {
  const now = record.readAtMs;
  const steps = Object.entries(record.steps);
  return [
    ['redis key', record.redisKey],
    ['tenant', token(record.key.tenantId)],
    ['run', token(record.key.runId)],
    ['tool', token(record.key.toolName)],
    ['args hash', token(record.key.argsHash)],
    ['idempotency key', `${idempotencyKeyFor(record.key)} (ctx.idempotencyKey: what the tool sent its provider)`],
    ['arguments', argumentsLabel(record)],
    ['state', stateLabel(record)],
    ['status', record.status],
    // Reasons, notes and redacted views are a model's or a person's text: made safe for the terminal.
    ...approvalFacts(record).map(([label, value]): [string, string] => [label, clip(terminalText(value), 500)]),
    ['attempts', String(record.attempts)],
    ['epoch', record.epoch === '' ? '-' : token(record.epoch)],
    ['effect', record.effect],
    ['owner', record.owner === null ? '-' : token(record.owner)],
    ['lease', record.leaseUntilMs === null ? '-' : `${leaseLabel(record)} (until ${isoTime(record.leaseUntilMs)})`],
    ['created', when(record.createdMs, now)],
    ['updated', when(record.updatedMs, now)],
    ['settled', when(record.completedMs, now)],
    ['ambiguous since', when(record.ambiguousMs ?? ambiguousSinceMs(record), now)],
    ['late heartbeat', when(record.lateHeartbeatMs, now)],
    ['late settle', record.lateSettle === null ? '-' : `${when(record.lateSettle.atMs, now)}, by attempt ${record.lateSettle.attempt}`],
    ['resolved', when(record.resolvedMs, now)],
    ['result', 'result' in record ? terminalText(JSON.stringify(record.result, null, 2) ?? '') : '-'],
    ['error', record.error === null ? '-' : token(record.error)],
    ['tier', record.tier === null ? '-' : token(record.tier)],
    [
      'steps',
      steps.length === 0 ? '-' : steps.map(([name, value]) => `${token(name)} = ${clip(terminalText(compactJson(value)), 200)}`).join('\n'),
    ],
    ['started', when(record.startedMs, now)],
    ['reconciled', reconciledLabel(record)],
    ['keyed re-run', when(record.keyedRerunMs, now)],
    ['jobs', jobLines(record)],
    ['history', historyLines(record)],
    ['expires', record.ttlMs < 0 ? 'never (no TTL)' : `in ${duration(record.ttlMs)}`],
  ];
}

/** The Redis key of a BullMQ job's hash, whose `data` field holds the job's arguments. */
function jobRedisKey(j: AttemptJob): string {
  return `${token(j.prefix)}:${token(j.queue)}:${token(j.id)}`;
}

/**
 * Where the call's arguments are: the data of the BullMQ job of its latest
 * attempt that recorded one (the receipt keeps only their digest).
 */
function argumentsLabel(record: ReceiptRecord): string {
  const job = record.jobs.at(-1);
  // A call that has not run yet (awaiting approval) records the job parked for it instead.
  const parked = record.approval?.job;
  if (job === undefined && parked === undefined) return `digest ${token(record.key.argsHash)}; no BullMQ job is recorded on the receipt`;
  const [which, whose] = job === undefined ? [parked!, 'the job parked for approval'] : [job, `attempt ${job.attempt}`];
  return (
    `digest ${token(record.key.argsHash)}; in the data of job ${token(which.id)} of queue ${token(which.queue)} ` +
    `(${whose}; redis-cli HGET ${jobRedisKey(which)} data)`
  );
}

/** One line per entry of the receipt's history, oldest first. */
export function historyLines(record: ReceiptRecord): string {
  const lines = record.history.map((e) => {
    const parts = [`#${e.seq} ${when(e.atMs, record.readAtMs)}`, token(e.what), `attempt ${e.attempt}`];
    if (e.by !== '') parts.push(`by ${token(e.by)}`);
    if (e.refused) parts.push('(refused: a verdict had settled the attempt)');
    if (e.note !== null) parts.push(`note: ${clip(token(e.note), 200)}`);
    if (e.error !== null) parts.push(`error: ${clip(token(e.error), 200)}`);
    return parts.join('  ');
  });
  if (record.historyDropped > 0)
    lines.unshift(`(${record.historyDropped} older entries dropped or unreadable; the last ${RECEIPT_HISTORY_CAP} are kept)`);
  return lines.length === 0 ? '-' : lines.join('\n');
}

/** The BullMQ jobs recorded on a receipt: each attempt's, then those that met it ambiguous. */
function jobLines(record: ReceiptRecord): string {
  const name = (j: AttemptJob) => `${token(j.prefix)}:${token(j.queue)} job ${token(j.id)}`;
  const parked = record.approval?.job;
  const lines = [
    ...(parked === undefined ? [] : [`parked for approval: ${name(parked)}`]),
    ...record.jobs.map((j) => `attempt ${j.attempt}: ${name(j)}`),
    ...record.metJobs.map((j) => `met it ambiguous: ${name(j)}`),
  ];
  return lines.length === 0 ? '-' : lines.join('\n');
}

/** `reconciled: completed | not_started | unknown`, with when, by whom and about which attempt; or a reconcile under way. */
export function reconciledLabel(record: ReceiptRecord): string {
  if (record.reconcilingUntilMs !== null && record.reconcilingUntilMs > record.readAtMs) {
    return `in progress, lease ${duration(record.reconcilingUntilMs - record.readAtMs)} left`;
  }
  const r = record.reconciled;
  if (r === null) return '-';
  const note = r.note === null ? '' : ` (${clip(terminalText(r.note), 200)})`;
  return `${r.verdict}${note}, attempt ${r.attempt}, by ${token(r.by)} ${when(r.atMs, record.readAtMs)}`;
}

/** Prints what an operator can do about an ambiguous receipt. */
export function writeResolveHint(out: Output, store: ReceiptStore, record: ReceiptRecord): void {
  writeLine(out);
  if (isContestedRecord(record)) {
    writeLine(
      out,
      `Contested: a claim reported attempt ${record.attempts} ambiguous, but the attempt has heartbeated since and may ` +
        'still settle it late. It cannot be resolved until it settles or its lease lapses; look again then.',
    );
    return;
  }
  writeLine(
    out,
    `Ambiguous: attempt ${record.attempts} of this ${record.effect} call lost its lease before completing, ` +
      'so its effect may or may not have happened. Check the effect, then settle it with one of:',
  );
  // --epoch=<e>, not --epoch <e>: an epoch may begin with '-', which the option parser would take for an option.
  const attempts = `--attempts ${record.attempts}${record.epoch === '' ? '' : ` --epoch=${record.epoch}`}`;
  writeLine(out, `  ${commandHint(store, 'resolve', record.redisKey, `${attempts} --completed --result '<result json>'`)}`);
  writeLine(out, `  ${commandHint(store, 'resolve', record.redisKey, `${attempts} --failed --error '<what you found>'`)}`);
}

/**
 * Prints every field of the receipt under `redisKey`, with times on the Redis
 * server's clock and the full result; for an ambiguous receipt, also the
 * `resolve` commands that would settle it. With `json`, prints the
 * `ReceiptRecord`. Throws {@link ReceiptNotFoundError} when there is no such
 * receipt.
 */
export async function showCommand({ store, out, args }: CommandContext<ShowArgs>): Promise<void> {
  const record = await readReceipt(store, args.redisKey);
  if (args.json) {
    const shown: ShownReceipt = {
      ...record,
      idempotencyKey: idempotencyKeyFor(record.key),
      ambiguousSinceMs: record.ambiguousMs ?? ambiguousSinceMs(record),
    };
    writeJson(out, shown);
    return;
  }
  for (const line of fields(receiptFields(record))) writeLine(out, line);
  if (isAmbiguousRecord(record)) writeResolveHint(out, store, record);
  if (record.status === 'awaiting_approval') {
    writeLine(out);
    writeLine(
      out,
      `Awaiting approval: the call has not run. Decide with ${commandHint(store, 'approve', record.redisKey, '--note <why>')} (or deny).`,
    );
  }
}

/** The `show` command. */
export const showSpec: CommandSpec<ShowArgs> = {
  name: 'show',
  synopsis: 'show <redisKey>',
  summary: 'every field of one receipt',
  help: `Usage: tool-receipts show <redisKey> [--json] [connection options]

Prints every field of one receipt: the call it belongs to, its idempotency
key (what the tool sent its provider), where its arguments are (the BullMQ
job), state, attempts, effect, owner, lease, times (server clock; "ambiguous
since" as \`ambiguous\` lists it), result or error, recorded steps, the
history (every operator verdict, reconcile verdict and late settle, kept
across attempts, the last ${RECEIPT_HISTORY_CAP}), and when it expires. For a
call that needed approval (awaiting_approval, approved, denied), also its
approval: the reason, what the approver is shown, when it was asked and
expires, the epoch and digest it is for, and who decided, when, from where
and with what note. For an ambiguous receipt, also prints the resolve
commands that would settle it; for one awaiting approval, the approve command.
Exits 1 when no receipt exists under the key.

<redisKey> is the key as \`ambiguous\` or \`run\` print it, for example
'trc:rcpt:{acme|run-42}:send_email:9f2c...'. Quote it: it holds { | and }.

Options:
  --json    print the receipt record as JSON instead, with idempotencyKey and
            ambiguousSinceMs added`,
  options: { ...JSON_OPTION },
  parse(values, positionals) {
    const [redisKey] = expectPositionals('show', positionals, ['redisKey']) as [string];
    return { redisKey, json: values['json'] === true };
  },
  run: showCommand,
};
