/**
 * `defineTool`: a tool as the wrapper runs it (its input schema, effect,
 * tier and reconcile), and the `ctx` its `execute` is given.
 * Over 300 lines: about a third of it is the TSDoc of that public API.
 */
import { z } from 'zod';
import type { Job } from 'bullmq';
import type { Logger } from 'pino';
import type { EffectResumability } from '../../core/decision.js';
import { describeValue, ToolReceiptsError } from '../../core/errors.js';
import type { AnyLimitDefinition } from '../../limits/definitions.js';
import { booleanOption, checkOptions, InvalidOptionsError, rule, type OptionRule, type OptionsSchema } from '../../core/options.js';
import { APPROVAL_OPTIONS_SCHEMA } from '../../approvals/options.js';
import type { ApprovalContext } from '../../approvals/types.js';
import { assertValidAliases, type ParamAliases } from '../../repair/aliases.js';
import { InvalidAliasError } from '../../repair/errors.js';
import type { TransactionalDatabase } from '../../transactional/database.js';
import { RUN_TRANSACTIONAL_SCHEMA, type RunTransactionalOptions } from '../../transactional/run.js';

/** What a tool's `execute` receives besides its arguments. */
export interface ToolContext {
  /** Aborted when this attempt loses its receipt lease, its BullMQ lock, or the worker shuts down. */
  readonly signal: AbortSignal;
  /**
   * The attempt number this execution holds on the receipt (1 for the first).
   * A read-only tool has no receipt: it gets the BullMQ job's attempt.
   */
  readonly attempt: number;
  readonly tenantId: string;
  readonly runId: string;
  readonly sessionId: string | undefined;
  /** The model's tool_use id for this call. */
  readonly callId: string;
  readonly job: Job;
  readonly logger: Logger;
  /**
   * The same string for every attempt of this call (it derives from the
   * receipt key). Hand it to providers that deduplicate requests, such as
   * payment or email APIs, so even an attempt that outlived its lease cannot
   * cause a second effect there.
   */
  readonly idempotencyKey: string;
  /**
   * Run a named sub-operation once per call. Its return value is recorded on
   * the receipt under this attempt's fence; a later attempt that takes over a
   * resumable call gets the recorded value back without running `fn` again.
   * Values must be JSON-serializable.
   */
  step<T>(name: string, fn: () => T | Promise<T>): Promise<T>;
}

/** What a tool's `reconcile` receives: the lost attempt it is asked about. */
export interface ReconcileContext extends Pick<
  ToolContext,
  'idempotencyKey' | 'tenantId' | 'runId' | 'sessionId' | 'callId' | 'job' | 'logger'
> {
  /** The attempt that lost its lease (its `idempotencyKey` is the call's, the same for every attempt). */
  readonly attempt: number;
  /** When that attempt started, in ms on the Redis server's clock. */
  readonly attemptStartedMs: number;
  /** Aborted when the reconcile times out or the job loses its lock. */
  readonly signal: AbortSignal;
}

/**
 * A reconcile's answer. `completed`: the effect landed, and `result` is what
 * the call returns (it is recorded and replayed from then on). `not_started`:
 * the effect did not land and the lost attempt can no longer land it, so the
 * call runs again as the next attempt. `unknown`: nobody can tell; the call
 * stays ambiguous for a person.
 */
export type ReconcileAnswer =
  | { readonly status: 'completed'; readonly result: unknown }
  | { readonly status: 'not_started' }
  | { readonly status: 'unknown'; readonly reason?: string };

/**
 * How a tool's effect can be recovered after a crash. `resumable` and
 * `opaque` as in {@link EffectResumability}; `keyed`: an opaque effect sent to
 * a provider that deduplicates on `ctx.idempotencyKey` for `keyWindowMs`, so
 * an interrupted attempt is run again with the same key inside that window;
 * `transactional`: writes to the tool's own PostgreSQL `database` only,
 * committed with the call's outcome row (see {@link TransactionalToolSpec}).
 */
export type ToolEffect = EffectResumability | 'keyed' | 'transactional';

/**
 * What a transactional tool's `execute` receives: the usual context without
 * `step` (the transaction is the tool's one step), plus `tx`, the driver's
 * or ORM's own object of the open transaction.
 */
export interface TransactionalToolContext<Tx> extends Omit<ToolContext, 'step'> {
  /** node-postgres' `PoolClient`, Drizzle's `tx` or Kysely's `Transaction`, inside the open transaction. */
  readonly tx: Tx;
}

/**
 * A tool whose only effect is writes to the team's own PostgreSQL, run
 * exactly once: the wrapper opens a transaction on `database`, runs
 * `execute` with it as `ctx.tx`, writes the call's outcome row in the same
 * transaction, commits, and only then completes the receipt. After any
 * crash the outcome row settles the call (never ambiguous, never run twice).
 *
 * Nothing remote inside the transaction: no API call, no email, no queue
 * message, no write through another connection. None of those roll back
 * with it, and an attempt whose transaction rolled back runs again. A tool
 * that needs a remote effect and a local write is two tools, or an opaque one.
 * Every query must go through `ctx.tx` and be awaited; the tool must not
 * commit, roll back or end the transaction itself.
 */
export interface TransactionalToolSpec<S extends z.ZodType, Tx> extends Omit<
  ToolSpec<S>,
  'effect' | 'execute' | 'keyWindowMs' | 'reconcile' | 'reconcileTimeoutMs' | 'database' | 'transaction'
> {
  readonly effect: 'transactional';
  /** Where the tool writes: `pgDatabase`, `drizzleDatabase`, `kyselyDatabase` (`bullmq-tool-receipts/transactional`) or your own adapter. */
  readonly database: TransactionalDatabase<Tx>;
  /** The transaction's isolation level and timeouts (see `runTransactional`); default READ COMMITTED. */
  readonly transaction?: RunTransactionalOptions;
  execute(args: z.output<S>, ctx: TransactionalToolContext<Tx>): unknown;
}

/**
 * MCP tool annotations. They are hints from whoever wrote the tool; explicit
 * flags on {@link defineTool} and the wrapper's `destructiveTools` patterns
 * win over them.
 */
export interface ToolAnnotations {
  readonly readOnlyHint?: boolean;
  readonly destructiveHint?: boolean;
  readonly idempotentHint?: boolean;
  readonly openWorldHint?: boolean;
}

/** What a tool author writes. */
export interface ToolSpec<S extends z.ZodType> {
  /** Letters, digits, `_` and `-`, at most 64 characters (what model APIs accept). */
  readonly name: string;
  readonly description?: string;
  /** Validates the model's input; `execute` receives its parsed output. */
  readonly input: S;
  /**
   * `opaque` unless every effect is recorded through `ctx.step`, or `keyed`
   * when the provider deduplicates on `ctx.idempotencyKey` (then set
   * `keyWindowMs`). `keyed` is a promise about the provider: see docs/settling.md.
   */
  readonly effect: ToolEffect;
  /** For `keyed`: how long the provider deduplicates a key, from the first attempt's start. */
  readonly keyWindowMs?: number;
  /** For `transactional` only: the database its writes go to (see {@link TransactionalToolSpec}). */
  readonly database?: TransactionalDatabase<unknown>;
  /** For `transactional` only: how its transaction runs. */
  readonly transaction?: RunTransactionalOptions;
  /**
   * For `opaque` and `keyed` tools: asked, by exactly one worker, whether an
   * attempt that lost its lease had its effect land. Throwing or taking
   * longer than `reconcileTimeoutMs` counts as `unknown`.
   */
  reconcile?(args: z.output<S>, ctx: ReconcileContext): ReconcileAnswer | Promise<ReconcileAnswer>;
  /** How long `reconcile` may take before its answer counts as `unknown`. Default 10 s. */
  readonly reconcileTimeoutMs?: number;
  readonly destructive?: boolean;
  readonly idempotent?: boolean;
  /**
   * The tool only reads: running it again is harmless. It then runs without
   * a receipt (no Redis round trip; never replayed, never ambiguous), unless
   * the wrapper's `destructiveTools` names it. Default: the MCP annotation
   * `readOnlyHint`, else false.
   */
  readonly readOnly?: boolean;
  /**
   * Safe to run side by side with the other calls of its turn (default
   * false). Consecutive calls of such tools in one job run concurrently, each
   * with its own receipt, lease and fence; results stay in call order.
   */
  readonly parallel?: boolean;
  readonly annotations?: ToolAnnotations;
  /** Alternative argument names models use, per parameter: `{ baseUrl: ['url'] }`. */
  readonly aliases?: Readonly<Record<string, readonly string[]>>;
  /**
   * The JSON Schema the model is shown for this tool, when the tool came with
   * one (an MCP server's `inputSchema`): {@link toolJsonSchema} returns it
   * as given instead of rendering `input`, which still validates every call.
   */
  readonly inputJsonSchema?: Readonly<Record<string, unknown>>;
  /**
   * Limits that count this tool's calls only (see `defineLimit` in
   * `bullmq-tool-receipts/limits`); a limit shared by several tools goes on
   * `withToolReceipts({ limits })` with `tools`. Checked when the processor
   * is made (`options.invalid` naming `tools[i].limits[j].<field>`).
   */
  readonly limits?: readonly AnyLimitDefinition<z.output<S>>[];
  /**
   * The call waits for a person before it runs: `'always'`, or a rule of
   * the parsed arguments (`true`, or `{ reason }` shown to the approver).
   * Default: the worker's `approval`, else none. See docs/approvals.md.
   */
  readonly approval?: 'always' | ((args: z.output<S>, ctx: ApprovalContext) => boolean | { readonly reason: string });
  /** What an approver is shown instead of the arguments; without it the receipt stores none of them. */
  readonly redact?: (args: z.output<S>) => unknown;
  /** How long a call waits for a decision before it counts as denied. Default 24 h. */
  readonly approvalTimeoutMs?: number;
  execute(args: z.output<S>, ctx: ToolContext): unknown;
}

/** A tool after {@link defineTool}: flags resolved, immutable. */
export interface ToolDefinition<S extends z.ZodType = z.ZodType> extends ToolSpec<S> {
  readonly destructive: boolean;
  readonly idempotent: boolean;
  readonly readOnly: boolean;
  readonly openWorld: boolean;
  readonly parallel: boolean;
}

/** A tool definition whose input type has been forgotten, for collections of tools. */
export type AnyToolDefinition = ToolDefinition<z.ZodType>;

/** Thrown by {@link defineTool} for a definition no model API or wrapper can use. */
export class InvalidToolDefinitionError extends ToolReceiptsError {
  readonly code = 'tool.invalid_definition';
}

const TOOL_NAME = /^[A-Za-z0-9_-]{1,64}$/;
const TOOL_EFFECTS = ['opaque', 'resumable', 'keyed', 'transactional'] as const satisfies readonly ToolEffect[];

/**
 * A tool's `input` is not a zod 4 schema: a zod 3 schema, or no schema at
 * all. Validation, repair and the JSON Schema for the model all read zod 4's
 * internals, so such a tool is refused when it is defined, not at its first call.
 */
export class ToolSchemaUnsupportedError extends ToolReceiptsError {
  readonly code = 'tool.schema_unsupported';
  constructor(
    readonly tool: string,
    got: string,
  ) {
    super(
      `tool ${tool}: \`input\` must be a zod 4 schema, got ${got}. ` +
        'Install zod 4 (npm install zod@^4) and build the schema with `import { z } from "zod"`',
    );
  }
}

/** What `input` is, when it is not a zod 4 schema; `undefined` when it is one. */
function unsupportedSchema(input: unknown): string | undefined {
  if (typeof input !== 'object' || input === null) return describeValue(input);
  const internals = (input as { _zod?: { def?: unknown } })._zod;
  if (typeof internals === 'object' && internals !== null && typeof internals.def === 'object') return undefined;
  return '_def' in input ? 'a zod 3 schema' : 'an object that is not a zod schema';
}

/**
 * A {@link ToolSpec} of any effect but `transactional`, which needs a
 * `database` ({@link TransactionalToolSpec}): so `effect: 'transactional'`
 * without one does not compile.
 */
export type NonTransactionalToolSpec<S extends z.ZodType> = ToolSpec<S> & { readonly effect: Exclude<ToolEffect, 'transactional'> };

/**
 * Declare a tool once. Flags resolve with MCP's defaults: a tool that is not
 * read-only counts as destructive unless it says otherwise, and a read-only
 * tool is idempotent. Explicit `destructive` / `idempotent` / `readOnly` win
 * over annotation hints. A tool already defined (or spread into a new spec,
 * `defineTool({ ...tool, parallel: true })`) is taken as it is, its effect
 * checked again when it is defined.
 */
export function defineTool<S extends z.ZodType, Tx>(spec: TransactionalToolSpec<S, Tx>): ToolDefinition<S>;
export function defineTool<S extends z.ZodType>(spec: ToolDefinition<S>): ToolDefinition<S>;
export function defineTool<S extends z.ZodType>(spec: NonTransactionalToolSpec<S>): ToolDefinition<S>;
export function defineTool<S extends z.ZodType>(given: ToolSpec<S> | TransactionalToolSpec<S, any>): ToolDefinition<S> {
  // A transactional spec is a ToolSpec whose execute also receives ctx.tx (the wrapper passes it).
  const spec = given as ToolSpec<S>;
  if (typeof spec !== 'object' || spec === null) {
    throw new InvalidToolDefinitionError('defineTool needs a tool spec: { name, input, effect, execute }');
  }
  if (!TOOL_NAME.test(spec.name)) {
    throw new InvalidToolDefinitionError(`tool name ${JSON.stringify(spec.name)} must be 1-64 letters, digits, "_" or "-"`);
  }
  if (!(TOOL_EFFECTS as readonly unknown[]).includes(spec.effect)) {
    throw new InvalidToolDefinitionError(`tool ${spec.name}: effect must be "opaque", "resumable", "keyed" or "transactional"`);
  }
  const unsupported = unsupportedSchema(spec.input);
  if (unsupported !== undefined) throw new ToolSchemaUnsupportedError(spec.name, unsupported);
  checkSpecFields(spec);
  if (spec.aliases !== undefined) checkAliases(spec.name, spec.input, spec.aliases);
  checkRecovery(spec);
  if (typeof spec.execute !== 'function') {
    throw new InvalidToolDefinitionError(`tool ${spec.name}: execute must be a function`);
  }
  const hints = spec.annotations ?? {};
  const readOnly = spec.readOnly ?? hints.readOnlyHint ?? false;
  const destructive = spec.destructive ?? (readOnly ? false : (hints.destructiveHint ?? true));
  const idempotent = spec.idempotent ?? (readOnly ? true : (hints.idempotentHint ?? false));
  const openWorld = hints.openWorldHint ?? true;
  return Object.freeze({ ...spec, readOnly, destructive, idempotent, openWorld, parallel: spec.parallel ?? false });
}

/** Checked by their own rules in {@link defineTool}, with the tool's name in the sentence. */
const checkedApart: OptionRule = { check() {} };
const flag = booleanOption;
const HINTS = ['readOnlyHint', 'destructiveHint', 'idempotentHint', 'openWorldHint'] as const;

/**
 * The rule of each {@link ToolSpec} field. A flag must be a boolean: a string
 * such as `readOnly: 'false'` would read as true and run the tool without a
 * receipt. A misspelt field (`readonly`, `destructve`) is refused, naming the
 * one meant, rather than ignored.
 */
export const TOOL_SPEC_SCHEMA: OptionsSchema<ToolSpec<z.ZodType>> & { readonly openWorld: OptionRule } = {
  name: checkedApart,
  description: rule('a string', (v) => typeof v === 'string'),
  input: checkedApart,
  inputJsonSchema: rule('a JSON Schema object', (v) => typeof v === 'object' && v !== null && !Array.isArray(v)),
  effect: checkedApart,
  keyWindowMs: checkedApart,
  reconcile: checkedApart,
  reconcileTimeoutMs: checkedApart,
  database: checkedApart,
  transaction: { check: (v, site) => void checkOptions(site.owner, v, RUN_TRANSACTIONAL_SCHEMA, site.option) },
  destructive: flag,
  idempotent: flag,
  readOnly: flag,
  parallel: flag,
  // A defined tool spread into a new spec (`defineTool({ ...tool, parallel: true })`) carries its resolved flags.
  openWorld: flag,
  // MCP's annotations carry more than the hints (a title, say): only the hints are read, and checked.
  annotations: rule(
    `an object of MCP hints (${HINTS.join(', ')}: true or false)`,
    (v) =>
      typeof v === 'object' &&
      v !== null &&
      !Array.isArray(v) &&
      HINTS.every((h) => [undefined, true, false].includes((v as Record<string, unknown>)[h] as never)),
  ),
  aliases: rule(
    "an object of alias lists, e.g. { baseUrl: ['url'] }",
    (v) =>
      typeof v === 'object' &&
      v !== null &&
      !Array.isArray(v) &&
      Object.values(v).every((names) => Array.isArray(names) && names.every((n) => typeof n === 'string' && n !== '')),
  ),
  ...APPROVAL_OPTIONS_SCHEMA,
  execute: checkedApart,
  // Checked by withToolReceipts, with the worker's other limits: one name is one count across them.
  limits: rule('an array of limits', (v) => Array.isArray(v)),
};

/** The spec's fields against {@link TOOL_SPEC_SCHEMA}, refused as a tool definition naming the tool. */
function checkSpecFields(spec: ToolSpec<z.ZodType>): void {
  try {
    checkOptions(`defineTool (tool ${spec.name})`, spec, TOOL_SPEC_SCHEMA);
  } catch (error) {
    if (error instanceof InvalidOptionsError) throw new InvalidToolDefinitionError(error.message, { cause: error });
    throw error;
  }
}

/** An alias table that contradicts itself or the schema, refused as `tool_args.invalid_alias` naming the tool. */
function checkAliases(name: string, input: z.ZodType, aliases: ParamAliases): void {
  try {
    assertValidAliases(input, aliases);
  } catch (error) {
    if (error instanceof InvalidAliasError) throw new InvalidAliasError(error.problems.map((problem) => `tool ${name}: ${problem}`));
    throw error;
  }
}

const isPositiveInt = (n: unknown): boolean => typeof n === 'number' && Number.isSafeInteger(n) && n > 0;

/** The keyed window and the reconcile hook make sense only for the effects they recover. */
function checkRecovery(spec: ToolSpec<z.ZodType>): void {
  if (spec.effect === 'keyed' && !isPositiveInt(spec.keyWindowMs)) {
    throw new InvalidToolDefinitionError(
      `tool ${spec.name}: effect "keyed" needs keyWindowMs, the provider's deduplication window in ms (a positive integer), e.g. 86400000 for 24 h`,
    );
  }
  if (spec.effect !== 'keyed' && spec.keyWindowMs !== undefined) {
    throw new InvalidToolDefinitionError(`tool ${spec.name}: keyWindowMs goes with effect "keyed" only`);
  }
  if (spec.reconcile !== undefined && typeof spec.reconcile !== 'function') {
    throw new InvalidToolDefinitionError(`tool ${spec.name}: reconcile must be a function`);
  }
  if (spec.reconcile !== undefined && spec.effect === 'resumable') {
    throw new InvalidToolDefinitionError(
      `tool ${spec.name}: a resumable tool is taken over step by step and needs no reconcile; give reconcile to "opaque" or "keyed" tools`,
    );
  }
  if (spec.reconcileTimeoutMs !== undefined && !isPositiveInt(spec.reconcileTimeoutMs)) {
    throw new InvalidToolDefinitionError(`tool ${spec.name}: reconcileTimeoutMs must be a positive integer (ms)`);
  }
  checkTransactional(spec);
}

/** A transactional tool names its database and is settled from it: no reconcile, no window, no steps. */
function checkTransactional(spec: ToolSpec<z.ZodType>): void {
  if (spec.effect !== 'transactional') {
    if (spec.database !== undefined || spec.transaction !== undefined) {
      throw new InvalidToolDefinitionError(`tool ${spec.name}: database and transaction go with effect "transactional" only`);
    }
    return;
  }
  const db = spec.database as Partial<TransactionalDatabase<unknown>> | undefined;
  if (typeof db !== 'object' || db === null || typeof db.driver?.transaction !== 'function' || typeof db.outcomes !== 'object') {
    throw new InvalidToolDefinitionError(
      `tool ${spec.name}: effect "transactional" needs database, made by pgDatabase, drizzleDatabase, kyselyDatabase or transactionalDatabase (bullmq-tool-receipts/transactional)`,
    );
  }
  if (spec.reconcile !== undefined || spec.reconcileTimeoutMs !== undefined) {
    throw new InvalidToolDefinitionError(`tool ${spec.name}: a transactional tool is settled from its outcome row and takes no reconcile`);
  }
  if (spec.readOnly === true || spec.annotations?.readOnlyHint === true) {
    throw new InvalidToolDefinitionError(`tool ${spec.name}: a transactional tool writes; it cannot be read-only`);
  }
}

export { receiptEffectOf, recordedEffectOf } from '../../core/tool-effect.js';

/**
 * The JSON Schema of a tool's input, for the tool list sent to a model: the
 * tool's own `inputJsonSchema` when it has one, else its zod schema rendered.
 * Throws {@link InvalidToolDefinitionError} when the zod schema has no JSON
 * Schema form (a transform, for instance).
 */
export function toolJsonSchema(tool: AnyToolDefinition): Record<string, unknown> {
  if (tool.inputJsonSchema !== undefined) return structuredClone(tool.inputJsonSchema) as Record<string, unknown>;
  try {
    return z.toJSONSchema(tool.input, { io: 'input' }) as Record<string, unknown>;
  } catch (cause) {
    throw new InvalidToolDefinitionError(`tool ${tool.name}: its input schema has no JSON Schema form`, { cause });
  }
}

/** Tools in the shape model APIs take: `{ name, description, input_schema }`. */
export function toolListForModel(
  tools: Iterable<AnyToolDefinition>,
): Array<{ name: string; description: string; input_schema: Record<string, unknown> }> {
  return [...tools].map((tool) => ({
    name: tool.name,
    description: tool.description ?? '',
    input_schema: toolJsonSchema(tool),
  }));
}
