/**
 * `tool-receipts approvals [--tenant <t>]`, `approve <receiptKey>` and
 * `deny <receiptKey>`: the calls waiting for a person, and a person's fenced
 * decision on one (see docs/approvals.md).
 */
import { APPROVAL_ACTOR_MAX, APPROVAL_NOTE_MAX } from '../../approvals/decide.js';
import { listPendingApprovals } from '../../approvals/read.js';
import { decideAsOperator } from '../../operator/approvals.js';
import { serverTimeMs } from '../../redis/runs/counts.js';
import {
  commandHint,
  DURABILITY_OPTIONS,
  durabilityFlags,
  expectPositionals,
  JSON_OPTION,
  stringOption,
  wholeNumberOption,
  type CommandContext,
  type CommandSpec,
  type OptionValues,
} from '../command.js';
import { CliUsageError } from '../errors.js';
import { parseReceiptRedisKey } from '../receipt-key.js';
import { clip, compactJson, isoTime, relative, table, terminalText, token, writeJson, writeLine } from '../format.js';
import { defaultOperator } from './resolve.js';

/** Arguments of {@link approvalsCommand}. */
export interface ApprovalsArgs {
  readonly tenantId?: string;
  /** At most this many. */
  readonly count: number;
  readonly json: boolean;
}

/** Lists the calls awaiting approval, soonest to expire first. */
export async function approvalsCommand({ store, redis, out, args }: CommandContext<ApprovalsArgs>): Promise<void> {
  if (redis === undefined) throw new CliUsageError('approvals needs a Redis connection', 'approvals');
  const pending = await listPendingApprovals({
    redis,
    prefix: store.prefix,
    limit: args.count,
    ...(args.tenantId !== undefined ? { tenantId: args.tenantId } : {}),
  });
  if (args.json) return writeJson(out, pending);
  if (pending.length === 0) {
    const tenant = args.tenantId === undefined ? '' : ` of tenant ${token(args.tenantId)}`;
    return writeLine(out, `No calls${tenant} await approval under prefix ${store.prefix}.`);
  }
  const now = await serverTimeMs(redis);
  const rows = pending.map((p) => [
    token(p.tenantId),
    token(p.runId),
    token(p.toolName),
    relative(p.expiresAtMs, now),
    clip(terminalText(p.reason ?? '-').replace(/\n/g, '\\n'), 60),
    'shown' in p ? clip(terminalText(compactJson(p.shown)).replace(/\n/g, '\\n'), 60) : '(in the job)',
    p.receiptKey,
  ]);
  for (const line of table(['TENANT', 'RUN', 'TOOL', 'EXPIRES', 'REASON', 'SHOWN', 'RECEIPT'], rows)) writeLine(out, line);
  writeLine(out);
  writeLine(out, `Decide with ${commandHint(store, 'approve', pending[0]!.receiptKey, '--note <why>')} (or deny).`);
}

/** Arguments of {@link decideCommand}. */
export interface DecideArgs {
  readonly verb: 'approve' | 'deny';
  readonly receiptKey: string;
  readonly epoch?: string;
  readonly argsHash?: string;
  readonly actor: string;
  readonly note?: string;
  readonly json: boolean;
  /** The workers' durability (`--replicas`, `--aof`): the decision waits for it as their writes do. */
  readonly durability?: { readonly replicas: number; readonly aof: boolean };
}

/**
 * Approves or denies one call: fenced on `--epoch`/`--args-hash` when given,
 * else on the pending approval as read (printed). A refusal throws the typed
 * error (`approval.*`), which the CLI prints as its sentence, exit 1.
 */
export async function decideCommand({ store, redis, out, args }: CommandContext<DecideArgs>): Promise<void> {
  if (redis === undefined) throw new CliUsageError(`${args.verb} needs a Redis connection`, args.verb);
  // A key that is no receipt key under this prefix is a bad command line (exit 2), as for show and resolve.
  parseReceiptRedisKey(args.receiptKey, store.prefix);
  const { decided, epoch, argsHash, fenceRead } = await decideAsOperator(args.verb, {
    redis,
    prefix: store.prefix,
    // A denied receipt is kept as long as the workers keep a settled one (--retention-ms).
    retentionMs: store.channel.settings.retentionMs,
    receiptKey: args.receiptKey,
    actor: args.actor,
    source: 'cli',
    ...(args.epoch !== undefined ? { epoch: args.epoch } : {}),
    ...(args.argsHash !== undefined ? { argsHash: args.argsHash } : {}),
    ...(args.note !== undefined ? { note: args.note } : {}),
    ...(args.durability !== undefined ? { durability: args.durability } : {}),
  });
  if (args.json) return writeJson(out, { ...decided, epoch, argsHash });
  writeLine(out, `${fenceRead ? 'Read' : 'Given'}: epoch ${token(epoch)}, arguments digest ${token(argsHash)}.`);
  writeLine(
    out,
    `${decided.decision === 'approved' ? 'Approved' : 'Denied'} ${args.receiptKey} as ${token(decided.actor)} at ${isoTime(decided.atMs)}${decided.note === undefined ? '' : ', with your note'}.`,
  );
  writeLine(
    out,
    decided.decision === 'approved'
      ? 'Its job runs the call once, now (or when it next wakes, if it could not be promoted).'
      : 'The call is never run; the model reads who denied it and your note.',
  );
}

function textOption(values: OptionValues, name: string, max: number, command: string): string | undefined {
  const text = stringOption(values, name);
  if (text === undefined) return undefined;
  if (text.trim() === '' || text.length > max)
    throw new CliUsageError(`--${name} must be non-blank text of at most ${max} characters`, command);
  return text;
}

function fenceOption(values: OptionValues, name: 'epoch' | 'args-hash', command: string): string | undefined {
  const text = stringOption(values, name);
  if (text === undefined) return undefined;
  if (!/^[A-Za-z0-9_-]{1,200}$/.test(text))
    throw new CliUsageError(
      `--${name} must be the ${name === 'epoch' ? 'epoch' : 'digest'} approvals --json prints, got ${JSON.stringify(text)}`,
      command,
    );
  return text;
}

/** The `approvals` command. */
export const approvalsSpec: CommandSpec<ApprovalsArgs> = {
  name: 'approvals',
  synopsis: 'approvals',
  summary: 'the calls awaiting a person’s approval',
  help: `Usage: tool-receipts approvals [--tenant <t>] [--count <n>] [--json] [connection options]

Lists the calls awaiting approval, soonest to expire first: tenant, run,
tool, when the approval expires (then the call counts as denied), the reason
the tool's rule gave, what the tool's redact hook shows (else the arguments
are only in the BullMQ job), and the receipt key approve and deny take.

Options:
  --tenant <t>   only this tenant's calls (the id exactly)
  --count <n>    at most this many (default 100)
  --json         print a JSON array of {receiptKey, tenantId, runId, toolName,
                 argsHash, epoch, reason?, shown?, requestedAtMs, expiresAtMs,
                 jobId?, job?}`,
  options: { ...JSON_OPTION, tenant: { type: 'string' }, count: { type: 'string' } },
  parse(values, positionals) {
    expectPositionals('approvals', positionals, []);
    const tenantId = stringOption(values, 'tenant');
    return {
      ...(tenantId !== undefined ? { tenantId } : {}),
      count: wholeNumberOption(values, 'count', 1, 'approvals') ?? 100,
      json: values['json'] === true,
    };
  },
  run: approvalsCommand,
};

function decideSpec(verb: 'approve' | 'deny'): CommandSpec<DecideArgs> {
  const effect =
    verb === 'approve'
      ? 'Approves a call awaiting approval: its parked job is promoted and runs the\ncall exactly once.'
      : 'Denies a call awaiting approval: it is never run, and the model reads who\ndenied it and your note.';
  return {
    name: verb,
    synopsis: `${verb} <receiptKey>`,
    summary: verb === 'approve' ? 'approve a call awaiting approval (it runs once)' : 'deny a call awaiting approval (it never runs)',
    help: `Usage: tool-receipts ${verb} <receiptKey> [--note <text>] [--actor <name>] [--epoch <e> --args-hash <h>] [--json]

${effect} The decision is fenced: it names the receipt's lifetime (epoch)
and the arguments' digest, so it can never decide another call or a later
lifetime. Without --epoch/--args-hash they are read from the pending approval
and printed. Exits 1 with one sentence, nothing written, when the call is not
awaiting approval (naming who decided it, if somebody did), the epoch or the
digest is not the call's, or the approval expired. Recorded in the receipt's
history and the audit log (source cli).

Options:
  --note <text>       why; kept, and read by the model after a denial (at
                      most ${APPROVAL_NOTE_MAX} characters)
  --actor <name>      who decides (default <OS user>@<host>; at most ${APPROVAL_ACTOR_MAX})
  --epoch <e>         the lifetime you saw (approvals --json prints it)
  --args-hash <h>     the arguments digest you saw (likewise)
  --replicas <n>      the workers use durability: { replicas: n }; the decision
                      is acknowledged only once n replicas have it
  --aof               the workers use durability: { aof: true }
  --json              print {receiptKey, decision, actor, note?, atMs, epoch, argsHash}`,
    options: {
      ...JSON_OPTION,
      note: { type: 'string' },
      actor: { type: 'string' },
      epoch: { type: 'string' },
      'args-hash': { type: 'string' },
      ...DURABILITY_OPTIONS,
    },
    parse(values, positionals) {
      const [receiptKey] = expectPositionals(verb, positionals, ['receiptKey']) as [string];
      const epoch = fenceOption(values, 'epoch', verb);
      const argsHash = fenceOption(values, 'args-hash', verb);
      const note = textOption(values, 'note', APPROVAL_NOTE_MAX, verb);
      const durability = durabilityFlags(values, verb);
      return {
        verb,
        receiptKey,
        ...(epoch !== undefined ? { epoch } : {}),
        ...(argsHash !== undefined ? { argsHash } : {}),
        actor: textOption(values, 'actor', APPROVAL_ACTOR_MAX, verb) ?? defaultOperator(),
        ...(note !== undefined ? { note } : {}),
        ...(durability !== undefined ? { durability } : {}),
        json: values['json'] === true,
      };
    },
    run: decideCommand,
  };
}

/** The `approve` command. */
export const approveSpec = decideSpec('approve');
/** The `deny` command. */
export const denySpec = decideSpec('deny');
