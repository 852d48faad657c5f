/**
 * The wrapper's side of transactional tools: one attempt run inside
 * `runTransactional` (the tool's writes and the outcome row in one
 * PostgreSQL transaction), a lapsed attempt settled from the outcome row
 * rather than by a person, and the start-up check of each tool's table.
 */
import type { Logger } from 'pino';
import { NeverStartedError, OutcomeUnknownError, ToolRefusedError } from '../core/tiers.js';
import type { AttemptFence } from '../redis/errors.js';
import { checkOutcomeTable } from '../transactional/setup.js';
import { deleteExpiredOutcomes, type OutcomeRetentionReport } from '../transactional/retention.js';
import { readOutcome } from '../transactional/outcome.js';
import { runTransactional } from '../transactional/run.js';
import type { TransactionalDatabase } from '../transactional/database.js';
import type { AnyToolDefinition, ReconcileAnswer, ToolContext, TransactionalToolContext } from './define-tool.js';

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
 * receipt's Redis key and the lifetime's epoch. Resolves to the committed
 * value (its own, or the winner's on a lost race); otherwise throws what the
 * call path already knows how to settle: the tool's refusal as it is, any
 * other rollback as {@link NeverStartedError} (its writes are not there; a
 * database that failed counts as a service not reached, not the tool's
 * failure), a lost COMMIT reply as {@link OutcomeUnknownError}, which the
 * claim after it settles from the outcome row.
 */
export async function runTransactionalAttempt(
  tool: AnyToolDefinition,
  args: unknown,
  ctx: ToolContext,
  receiptKey: string,
  fence: AttemptFence,
): Promise<TransactionalValue> {
  const attempt = { receiptKey, epoch: fence.epoch, attempt: fence.attempt };
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
      if (error.reason === 'tool_failed') {
        if (error.cause instanceof ToolRefusedError) throw error.cause;
        throw new NeverStartedError(`${messageOf(error.cause)} (the transaction rolled back; none of its writes happened)`, {
          cause: error,
        });
      }
      const unreachable = error.reason !== 'result_not_serializable';
      throw new NeverStartedError(error.message, { cause: error, unreachable });
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
 * The verdict on a transactional attempt that lost its lease, read from the
 * outcome row of its lifetime: there, the call completed with the row's
 * result; not there, it never committed (an attempt still holding its
 * transaction open will fail against the next attempt's row, or make it
 * replay), so the next attempt runs. A database that cannot be read throws:
 * the call is left for a later claim, never called ambiguous.
 */
export async function outcomeVerdict(tool: AnyToolDefinition, receiptKey: string, lost: AttemptFence): Promise<ReconcileAnswer> {
  const row = await readOutcome(databaseOf(tool), receiptKey, lost.epoch);
  if (row === undefined) return { status: 'not_started' };
  return { status: 'completed', result: row.result };
}

/** The history note of a verdict read from the outcome row. */
export function outcomeNote(answer: ReconcileAnswer, lost: AttemptFence): string {
  return answer.status === 'completed'
    ? `${SETTLED_FROM_POSTGRES}: the outcome row of this lifetime committed`
    : `${SETTLED_FROM_POSTGRES}: attempt ${lost.attempt} left no outcome row, so it never committed; the next attempt runs`;
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
