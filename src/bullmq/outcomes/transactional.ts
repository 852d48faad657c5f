/**
 * The wrapper's side of transactional tools: one attempt run inside
 * `runTransactional` (the tool's writes and the outcome row in one
 * PostgreSQL transaction), a lapsed attempt settled from the outcome row
 * rather than by a person, and the start-up check of each tool's table.
 */
import type { Logger } from 'pino';
import { NeverStartedError, OutcomeUnknownError, ToolRefusedError } from '../../core/tiers.js';
import type { AttemptFence } from '../../redis/errors.js';
import { checkOutcomeTable } from '../../transactional/setup.js';
import { deleteExpiredOutcomes, type OutcomeRetentionReport } from '../../transactional/retention.js';
import { holdLifetime, type EndedAttempt } from '../../transactional/takeover.js';
import { DEFAULT_IDLE_IN_TRANSACTION_MS, DEFAULT_LOCK_TIMEOUT_MS, runTransactional } from '../../transactional/run.js';
import type { TransactionalDatabase } from '../../transactional/database.js';
import type { AnyToolDefinition, ReconcileAnswer, ToolContext, TransactionalToolContext } from '../tools/define-tool.js';
import type { CallAttempt } from '../runtime.js';

/** How the history, `show` and the console name what settled a transactional call. */
export const SETTLED_FROM_POSTGRES = 'settled from PostgreSQL';

const databaseOf = (tool: AnyToolDefinition): TransactionalDatabase<unknown> => tool.database!;

/** What a transactional attempt gave: the value to complete the receipt with, and whether it was another attempt's. */
export interface TransactionalValue {
  readonly value: unknown;
  /** Another attempt of the lifetime had committed: this one's tool did not commit, the value is the winner's. */
  readonly replayed: boolean;
}

/**
 * Runs one attempt of a transactional tool, the outcome row keyed by the
 * receipt's Redis key and the lifetime's epoch; `confirm` (a fenced
 * heartbeat) runs inside the transaction before the row goes in. Resolves
 * to the committed value (its own, or the winner's on a lost race);
 * otherwise throws what the call path already knows how to settle: the
 * tool's refusal as it is; what `confirm` threw as it is (fenced out, or
 * Redis not answering); a rollback that proves the call never committed as
 * {@link NeverStartedError} (its writes are not there; a database that
 * failed counts as a service not reached, not the tool's failure); and as
 * {@link OutcomeUnknownError}, which the claim after it settles from the
 * outcome row, both a lost COMMIT reply and a rollback forced by another
 * attempt of the lifetime (its row held open, or a takeover deciding):
 * this attempt did not commit, but that one might have, so nothing may say
 * the call never ran.
 */
export async function runTransactionalAttempt(
  callRun: CallAttempt,
  ctx: ToolContext,
  confirm: () => Promise<void>,
): Promise<TransactionalValue> {
  const { tool, args, fence } = callRun;
  const attempt = { receiptKey: callRun.facts.receiptKey ?? '', epoch: fence.epoch, attempt: fence.attempt, confirm };
  // A transactional tool's execute takes a TransactionalToolContext (see defineTool); the definition's type forgets it.
  const context = (tx: unknown): TransactionalToolContext<unknown> => ({ ...contextFields(ctx), tx });
  const body = async (tx: unknown) => tool.execute(args, context(tx) as unknown as ToolContext);
  const run = await runTransactional(databaseOf(tool), attempt, body, tool.transaction);
  switch (run.status) {
    case 'committed':
      return { value: run.result, replayed: false };
    case 'replay':
      return { value: run.result, replayed: true };
    case 'outcome_unknown':
      throw new OutcomeUnknownError(run.error.message, { cause: run.error });
    case 'not_committed': {
      const { error } = run;
      switch (error.reason) {
        case 'tool_failed':
          if (error.cause instanceof ToolRefusedError) throw error.cause;
          throw new NeverStartedError(`${messageOf(error.cause)} (the transaction rolled back; none of its writes happened)`, {
            cause: error,
          });
        case 'not_confirmed':
          throw error.cause;
        case 'contended':
        case 'taken_over':
          throw new OutcomeUnknownError(`${error.message}; the call is settled from the outcome row`, { cause: error });
        default:
          throw new NeverStartedError(error.message, { cause: error, unreachable: error.reason !== 'result_not_serializable' });
      }
    }
  }
}

/** The context's fields as a plain object (its getters read), without `step`: the transaction is the tool's one step. */
function contextFields(ctx: ToolContext): Omit<ToolContext, 'step'> {
  return {
    get signal() {
      return ctx.signal;
    },
    attempt: ctx.attempt,
    tenantId: ctx.tenantId,
    runId: ctx.runId,
    sessionId: ctx.sessionId,
    callId: ctx.callId,
    job: ctx.job,
    get logger() {
      return ctx.logger;
    },
    idempotencyKey: ctx.idempotencyKey,
  };
}

const messageOf = (error: unknown): string => (error instanceof Error ? error.message : String(error));

/**
 * Settles a transactional attempt that lost its lease from the outcome row
 * of its lifetime, once no attempt of it can still commit: every open
 * transaction of the lifetime (a stalled attempt's) is ended first, then
 * the row is read, and `record` writes the verdict on the receipt while the
 * lifetime's lock is still held (see `holdLifetime`). The row there: the
 * call completed with its result; not there: nothing committed and nothing
 * can, so the next attempt runs. A database that cannot do this throws: the
 * call is left for a later claim, never called ambiguous.
 */
export async function settleFromOutcomeRow<T>(
  tool: AnyToolDefinition,
  receiptKey: string,
  lost: AttemptFence,
  record: (answer: ReconcileAnswer, note: string) => Promise<T>,
): Promise<T> {
  const hold = {
    lockTimeoutMs: tool.transaction?.lockTimeoutMs ?? DEFAULT_LOCK_TIMEOUT_MS,
    idleInTransactionTimeoutMs: tool.transaction?.idleInTransactionTimeoutMs || DEFAULT_IDLE_IN_TRANSACTION_MS,
  };
  return holdLifetime(
    databaseOf(tool),
    receiptKey,
    lost.epoch,
    ({ outcome, ended }) => {
      const answer: ReconcileAnswer = outcome === undefined ? { status: 'not_started' } : { status: 'completed', result: outcome.result };
      return record(answer, outcomeNote(answer, lost, ended));
    },
    hold,
  );
}

/** The history note of a verdict read from the outcome row: what was proven, and how. */
export function outcomeNote(answer: ReconcileAnswer, lost: AttemptFence, ended: readonly EndedAttempt[] = []): string {
  const endedText =
    ended.length === 0
      ? 'no attempt held it open'
      : `the open transaction${ended.length === 1 ? '' : 's'} of ${ended.map((e) => `backend ${e.pid}`).join(', ')} ${ended.length === 1 ? 'was' : 'were'} ended first`;
  return answer.status === 'completed'
    ? `${SETTLED_FROM_POSTGRES}: the outcome row of this lifetime committed (${endedText})`
    : `${SETTLED_FROM_POSTGRES}: no outcome row of this lifetime committed and none can (${endedText}), so attempt ${lost.attempt} never committed; the next attempt runs`;
}

/** The distinct databases of the transactional tools among `tools`. */
function databasesOf(tools: Iterable<AnyToolDefinition>): Set<TransactionalDatabase<unknown>> {
  const databases = new Set<TransactionalDatabase<unknown>>();
  for (const tool of tools) if (tool.effect === 'transactional') databases.add(databaseOf(tool));
  return databases;
}

/**
 * Removes the outcome rows that outlived their receipts: rows of attempts
 * that started more than `2 × retentionMs + leaseMs` ago. A settled receipt
 * lives its retention past its last write, and no attempt of a lifetime
 * starts after its receipt is gone; but a lapsed receipt's last write may
 * come well after its attempt started (the tool ran long, or claims kept it
 * while PostgreSQL could not be read), and a row gone before its receipt
 * would let the call run again, so rows are kept a second retention. In bounded batches (`deleteExpiredOutcomes`'
 * defaults: 1,000 rows a statement, at most 100 statements a sweep), on each
 * transactional tool's database. Returns what each one deleted.
 */
export async function sweepExpiredOutcomes(
  tools: Iterable<AnyToolDefinition>,
  limits: { readonly retentionMs: number; readonly leaseMs: number },
): Promise<OutcomeRetentionReport[]> {
  const reports: OutcomeRetentionReport[] = [];
  for (const db of databasesOf(tools)) {
    reports.push(await deleteExpiredOutcomes(db, { olderThanMs: 2 * limits.retentionMs + limits.leaseMs }));
  }
  return reports;
}

/**
 * Checks every distinct database of the transactional tools for its outcome
 * table, writing nothing: rejects with `transactional.table_missing` (whose
 * message prints the `tool-receipts migrate` command) or
 * `transactional.table_mismatch`.
 */
export async function checkTransactionalTools(tools: Iterable<AnyToolDefinition>): Promise<void> {
  for (const db of databasesOf(tools)) await checkOutcomeTable(db);
}

/**
 * The outcome tables of the transactional tools, checked once the processor
 * is made (so a missing table is an error line at start-up, not at the first
 * call); a failed check is logged and tried again on the next `ready()`.
 * `undefined` when no tool is transactional: there is nothing to check.
 */
export function startUpCheck(tools: readonly AnyToolDefinition[], logger: Logger): (() => Promise<void>) | undefined {
  if (!tools.some((tool) => tool.effect === 'transactional')) return undefined;
  let checked: Promise<void> | undefined;
  const ready = () =>
    (checked ??= checkTransactionalTools(tools).catch((error: unknown) => {
      checked = undefined;
      throw error;
    }));
  ready().catch((error: unknown) => {
    logger.error({ code: (error as { code?: string }).code, err: error }, `transactional tools cannot run: ${(error as Error).message}`);
  });
  return ready;
}
