/**
 * A call prepared before anything is claimed: its input validated (repaired
 * only when that fails), its receipt key and claim options, the next call
 * staged ahead, and the `ctx` its tool runs with.
 * Over 300 lines: staging a call, claiming it ahead and building its `ctx`
 * are the three things a call is given before it runs, read in that order.
 */
import { createHash } from 'node:crypto';
import type { Job } from 'bullmq';
import type { Logger } from 'pino';
import type { z } from 'zod';
import { toolCallArgsHash, toolCallReceiptKeyString, type ToolCallReceiptKey } from '../core/identity.js';
import { recordedEffectOf } from '../core/tool-effect.js';
import { FencedOutError, type AttemptFence } from '../redis/errors.js';
import type { AttemptJob } from '../redis/receipts/reads/record.js';
import type { ClaimOptions, PrefetchedClaim, ReceiptStore } from '../redis/receipts/store.js';
import type { CallAbort, CallRuntime, JobScope, PreparedCall } from './call-runtime.js';
import type { AnyToolDefinition, ToolContext } from './define-tool.js';
import type { ToolCall } from '../core/job-data.js';
import type { CallObservation } from './observer.js';
import { repairInput, type InputRepairOptions } from './input-repair.js';

export type { InputRepairOptions } from './input-repair.js';

/**
 * zod types whose valid input repair never changes: no alias, no decoded
 * string, no dropped null can make such an input other than it was sent
 * (a string where only an object or array belongs, or a null where only
 * absence does, fails their parse). Wrappers that can accept more than they
 * show (`catch`, `pipe`, `transform`, `lazy`, ...) are not among them.
 */
const AS_SENT_TYPES: ReadonlySet<string> = new Set([
  'string',
  'number',
  'int',
  'boolean',
  'bigint',
  'null',
  'undefined',
  'any',
  'unknown',
  'enum',
  'literal',
  'template_literal',
  'object',
  'record',
  'array',
  'tuple',
  'union',
  'optional',
  'nullable',
  'default',
  'readonly',
  'nonoptional',
]);

/** Whether every schema in `schema`'s tree is of a type whose valid input repair leaves as sent. */
function validAsSent(schema: z.ZodType): boolean {
  const seen = new Set<unknown>();
  const visit = (node: unknown): boolean => {
    if (seen.has(node)) return true;
    seen.add(node);
    const def = (node as { _zod: { def: Record<string, unknown> & { type: string } } })._zod.def;
    if (!AS_SENT_TYPES.has(def.type)) return false;
    for (const value of Object.values(def)) {
      const children = Array.isArray(value) ? value : isSchema(value) ? [value] : isPlain(value) ? Object.values(value) : [];
      if (!children.every((child) => !isSchema(child) || visit(child))) return false;
    }
    return true;
  };
  return visit(schema);
}

const isSchema = (value: unknown): boolean => typeof value === 'object' && value !== null && '_zod' in value;
const isPlain = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && Object.getPrototypeOf(value) === Object.prototype;

/**
 * The function that prepares each call's input, made once per processor.
 * The input is parsed as sent; when that succeeds and repair could not have
 * changed it (the tool has no aliases and its schema is of plain types, see
 * {@link validAsSent}), the call runs with it, as the long way would have
 * had it. Otherwise, and whenever the parse fails, the long way
 * (`repairInput`) decides.
 */
export function inputPreparer(
  options: InputRepairOptions,
  tools: Iterable<AnyToolDefinition>,
): (call: ToolCall, tool: AnyToolDefinition, abort: { readonly signal: AbortSignal }) => Promise<PreparedCall> {
  const asSent = new Set<AnyToolDefinition>();
  for (const tool of tools) if (Object.keys(tool.aliases ?? {}).length === 0 && validAsSent(tool.input)) asSent.add(tool);
  return async (call, tool, abort) => {
    if (call.input !== undefined && asSent.has(tool)) {
      try {
        const parsed = await tool.input.safeParseAsync(call.input);
        if (parsed.success) return { ok: true, rawInput: call.input, args: parsed.data };
      } catch {
        // A schema that throws is reported the long way, as an issue of the input.
      }
    }
    return repairInput(call, tool, options, abort);
  };
}

/** A call looked up and prepared: what it will run with, or why it will not run. */
export type StagedCall =
  | { readonly kind: 'unknownTool' }
  | { readonly kind: 'rejected'; readonly tool: AnyToolDefinition; readonly prepared: Extract<PreparedCall, { ok: false }> }
  | { readonly kind: 'ready'; readonly tool: AnyToolDefinition; readonly args: unknown; readonly key: ToolCallReceiptKey };

/**
 * Looks the call's tool up, prepares its input and derives its receipt key.
 * Writes nothing: a rejection is recorded by the call when it runs.
 */
export async function stageCall(rt: CallRuntime, scope: JobScope, call: ToolCall): Promise<StagedCall> {
  const tool = rt.tools.get(call.name);
  if (!tool) return { kind: 'unknownTool' };
  const prepared = await rt.prepare(call, tool, scope.abort);
  if (!prepared.ok) return { kind: 'rejected', tool, prepared };
  const { tenantId, runId } = scope.data;
  const key = { tenantId, runId, toolName: tool.name, argsHash: await toolCallArgsHash(prepared.rawInput, rt.digest) };
  return { kind: 'ready', tool, args: prepared.args, key };
}

/** The BullMQ job a claim records for the attempt it may start. */
export function attemptJobOf(job: Job): AttemptJob | undefined {
  if (job.id === undefined) return undefined;
  const qualified = job.queueQualifiedName;
  const prefix = qualified.endsWith(`:${job.queueName}`) ? qualified.slice(0, -(job.queueName.length + 1)) : 'bull';
  return { queue: job.queueName, prefix, id: job.id };
}

/**
 * The options a call's claim is made with: the same whether the call claims
 * on its own or the previous call's settle claims it ahead. Only the call's
 * facts: the lease and the owner are the keyspace's settings, filled in by
 * the store.
 */
export function claimOptionsOf(job: Job, tool: AnyToolDefinition, settles = false): ClaimOptions {
  // One literal, no spreads: it is built for every claimed call.
  return { effect: recordedEffectOf(tool), job: attemptJobOf(job), settlesExpired: settles };
}

/**
 * The call that runs after the current one in a sequential stretch of a
 * turn: staged at most once, and possibly claimed by the current call's
 * complete. The turn hands it to both calls, and releases it when the job
 * stops before the call runs.
 *
 * In a turn whose calls run one after another, the complete of one call can
 * claim the next in the same script (`ReceiptStore.completeAndClaim`), so a
 * k-call turn costs about k + 1 round trips instead of 2k. The next call is
 * claimed ahead only when a claim of its own would be made now: it names a
 * known tool, its input prepared without a rejection, its tool takes a
 * receipt (not read-only), and the job is not interrupted. The claim's
 * answer is handed to that call, which decides from it exactly as from a
 * claim of its own.
 */
export class NextCall {
  private staging: Promise<StagedCall> | undefined;
  private claimed: PrefetchedClaim | undefined;
  private group: ClaimGroup | undefined;

  constructor(
    private readonly rt: CallRuntime,
    private readonly scope: JobScope,
    readonly call: ToolCall,
  ) {}

  /** The call staged; staged on first use only, so a call is prepared once. */
  stage(): Promise<StagedCall> {
    return (this.staging ??= stageCall(this.rt, this.scope, this.call));
  }

  /**
   * The claim to carry in the current call's complete, or `undefined` when
   * this call must not be claimed ahead (it takes no claim, its staging
   * threw, or the job was interrupted: a job that lost its lock or was
   * cancelled claims nothing more).
   */
  async claimToCarry(): Promise<{ readonly key: ToolCallReceiptKey; readonly options: ClaimOptions } | undefined> {
    // Staging that throws must not keep the current call from completing: the call then meets the same
    // error (the staging is kept) when it runs, as it would have without a claim carried for it.
    const staged = await this.stage().catch(() => undefined);
    if (staged === undefined) return undefined;
    if (staged.kind !== 'ready' || this.rt.runsWithoutReceipt(staged.tool) || this.scope.abort.aborted) return undefined;
    // A call a limit counts reserves its share before its claim, so it claims for itself.
    if (this.rt.limits?.covers(staged.tool.name)) return undefined;
    // A call of a tool with an approval rule passes its gate before any claim.
    if (this.rt.approvals?.of(staged.tool)) return undefined;
    return { key: staged.key, options: claimOptionsOf(this.scope.job, staged.tool) };
  }

  /** Makes this call take its claim from its side-by-side group's. */
  joinGroup(group: ClaimGroup): void {
    this.group = group;
  }

  /** Keeps what the current call's complete (or its group's claim) claimed for this call. */
  carried(ahead: PrefetchedClaim | null): void {
    this.claimed = ahead ?? undefined;
  }

  /**
   * The claim made ahead for this call, handed over once. A call of a
   * side-by-side group waits for the group's claim; the first of the group to
   * ask sends it, as a round trip of its own observation.
   */
  async claimedAhead(obs: CallObservation): Promise<PrefetchedClaim | undefined> {
    const group = this.group;
    if (group !== undefined) {
      if (group.sent) await group.claim();
      else await obs.roundTrip('claimGroup', () => group.claim());
    }
    return this.takeClaim();
  }

  /** The claim made ahead for this call, handed over once. */
  private takeClaim(): PrefetchedClaim | undefined {
    const ahead = this.claimed;
    this.claimed = undefined;
    return ahead;
  }

  /**
   * The job stops before this call runs. An attempt claimed ahead for it
   * never started its effect: settle it as failed `neverStarted`, so the
   * next delivery runs the call as its next attempt instead of finding an
   * attempt that lost its lease (ambiguous, for an opaque tool). Never throws:
   * a settle that cannot be written leaves the lease to lapse, as for any
   * interrupted attempt.
   */
  async release(why: string): Promise<void> {
    const ahead = this.takeClaim();
    if (!ahead?.fence) return;
    await this.rt.keyspace.receipts.fail(ahead.key, ahead.fence, { error: why, tier: 'neverStarted' }).catch(() => undefined);
  }
}

/**
 * Calls of a side-by-side group claimed together: one `claim-group-N.lua`
 * round trip, sent by the first of them to reach its claim, answers each.
 */
export class ClaimGroup {
  private sending: Promise<void> | undefined;

  constructor(
    private readonly rt: CallRuntime,
    private readonly members: readonly {
      readonly call: NextCall;
      readonly claim: { readonly key: ToolCallReceiptKey; readonly options: ClaimOptions };
    }[],
  ) {}

  get sent(): boolean {
    return this.sending !== undefined;
  }

  claim(): Promise<void> {
    this.sending ??= this.rt.keyspace.receipts.claimGroup(this.members.map((m) => m.claim)).then((answers) => {
      for (const [i, answer] of answers.entries()) this.members[i]!.call.carried(answer);
    });
    return this.sending;
  }

  /**
   * Stages `calls` (a side-by-side group, each staged once) and, when two or
   * more of them would claim now, makes them claim together.
   */
  static async form(rt: CallRuntime, calls: readonly NextCall[]): Promise<void> {
    const claims = await Promise.all(calls.map((call) => call.claimToCarry()));
    const members = calls.flatMap((call, i) => (claims[i] === undefined ? [] : [{ call, claim: claims[i] }]));
    if (members.length < 2) return;
    const group = new ClaimGroup(rt, members);
    for (const member of members) member.call.joinGroup(group);
  }
}

/** A stable idempotency key for every attempt of one call: a digest of the receipt key. */
export function idempotencyKeyFor(key: ToolCallReceiptKey): string {
  return `trc_${createHash('sha256').update(toolCallReceiptKeyString(key), 'utf8').digest('hex').slice(0, 40)}`;
}

/** Everything needed to build the `ctx` of one execution. */
export interface CallContextInput extends Pick<ToolContext, 'attempt' | 'tenantId' | 'runId' | 'sessionId' | 'callId' | 'job'> {
  /** The execution's abort; `ctx.signal` is its signal, made when the tool first reads it. */
  readonly abort: CallAbort;
  /** The call's logger, made when first asked for. */
  readonly logger: { logger(): Logger };
  /**
   * Where steps are recorded, and the fence of this execution's attempt that
   * every step write carries; `null` for a read-only call, which has no
   * receipt (its steps just run).
   */
  readonly receipt: { readonly store: ReceiptStore; readonly fence: AttemptFence } | null;
  readonly key: ToolCallReceiptKey;
  /** Steps recorded by earlier attempts (empty on attempt 1). */
  readonly recordedSteps: Record<string, unknown>;
  /** Called when a step write finds the fence closed. */
  readonly onFencedOut: (error: FencedOutError) => void;
}

/**
 * The {@link ToolContext} of one execution. `step` replays a value an
 * earlier attempt recorded, and otherwise runs the sub-operation and records
 * its value under this attempt's fence before returning it.
 *
 * A class, not an object literal: a literal with getters costs about 0.7 µs
 * to make (each getter a closure of its own), this about 0.02. `signal`,
 * `logger` and `idempotencyKey` are getters on the prototype, made on first
 * read (most tools read none of them); `step` is the instance's own, so a
 * tool may take it out of `ctx` (`{ step }`).
 */
export class ExecutionContext implements ToolContext {
  readonly attempt: number;
  readonly tenantId: string;
  readonly runId: string;
  readonly sessionId: string | undefined;
  readonly callId: string;
  readonly job: ToolContext['job'];
  readonly step: ToolContext['step'];
  readonly #input: CallContextInput;

  constructor(input: CallContextInput) {
    this.#input = input;
    this.attempt = input.attempt;
    this.tenantId = input.tenantId;
    this.runId = input.runId;
    this.sessionId = input.sessionId;
    this.callId = input.callId;
    this.job = input.job;
    let recorded: Map<string, unknown> | undefined;
    this.step = async <T>(name: string, fn: () => T | Promise<T>): Promise<T> => {
      const steps = (recorded ??= new Map(Object.entries(input.recordedSteps)));
      if (steps.has(name)) return steps.get(name) as T;
      input.abort.throwIfAborted();
      const value = await fn();
      if (input.receipt === null) return value;
      try {
        await input.receipt.store.recordStep(input.key, input.receipt.fence, name, value);
      } catch (error) {
        if (error instanceof FencedOutError) input.onFencedOut(error);
        throw error;
      }
      steps.set(name, value);
      return value;
    };
  }

  get signal(): AbortSignal {
    return this.#input.abort.signal;
  }

  get logger(): Logger {
    return this.#input.logger.logger();
  }

  /** Computed on each read from the receipt key: most tools never ask for it. */
  get idempotencyKey(): string {
    return idempotencyKeyFor(this.#input.key);
  }
}
