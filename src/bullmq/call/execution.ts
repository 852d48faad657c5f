/**
 * What one execution of a tool runs under: its lease, kept by heartbeats
 * ({@link LeaseKeeper}); its abort, made only when read ({@link LazyAbort});
 * the watch on its fence ({@link FenceWatch}); and the `ctx` the tool is
 * handed ({@link ExecutionContext}).
 */
import type { Logger } from 'pino';
import { idempotencyKeyFor, type ToolCallReceiptKey } from '../../core/identity.js';
import { FencedOutError, type AttemptFence } from '../../redis/errors.js';
import type { ReceiptStore } from '../../redis/receipts/store.js';
import type { FencedOutEvent } from '../events.js';
import type { CallAbort } from '../runtime.js';
import type { ToolContext } from '../tools/define-tool.js';
import type { CallFacts } from './facts.js';

/**
 * The watch on one attempt's fence: the first write refused because
 * another attempt owns the receipt (a step, a heartbeat, the complete or
 * fail, an abort's check) is reported once, and aborts the attempt, so
 * nothing is settled after it. One object per execution, handed to what
 * writes under the fence, rather than a closure for each of them.
 */
export class FenceWatch {
  /** Where the attempt was first fenced out; `undefined` while it holds the receipt. */
  during: FencedOutEvent['during'] | undefined;

  constructor(
    private readonly facts: CallFacts,
    private readonly attempt: number,
    private readonly abort: LazyAbort,
  ) {}

  fencedOut(during: FencedOutEvent['during'], error: FencedOutError): void {
    if (this.during !== undefined) return;
    this.during = during;
    this.facts.fencedOut(during, this.attempt, error.observed);
    this.abort.abort(error);
  }
}

/**
 * Extends a receipt lease while a tool runs: every third of the lease, so two
 * heartbeats can be lost before the lease lapses. When the store answers that
 * another attempt owns the receipt, it tells its {@link FenceWatch} and stops.
 * Other errors (Redis briefly unreachable) are reported and retried on the
 * next tick; if the lease lapses meanwhile, the next heartbeat learns the
 * outcome. A heartbeat that finds the attempt already reported ambiguous
 * (contested) still extends the lease, and is reported once: the attempt
 * goes on, and its settle will be recorded as late.
 */
export class LeaseKeeper {
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  private contestedReported = false;

  constructor(
    private readonly store: ReceiptStore,
    private readonly key: ToolCallReceiptKey,
    private readonly fence: AttemptFence,
    private readonly leaseMs: number,
    private readonly facts: CallFacts,
    private readonly watch: FenceWatch,
    /** Sent with each timed heartbeat: the renewal of the call's slots of in-flight caps, when it holds any. */
    private readonly alsoOnBeat?: () => Promise<void>,
  ) {}

  start(): this {
    const every = Math.max(10, Math.floor(this.leaseMs / 3));
    this.timer = setInterval(() => void this.beat(), every);
    this.timer.unref();
    return this;
  }

  /**
   * One heartbeat now, whose failure rejects: a transactional attempt sends
   * it inside its transaction, before its outcome row, to learn that it
   * still holds the receipt (see `holdLifetime`). Fenced out, it is reported
   * as a timed heartbeat's would be, and the keeper stops.
   */
  async confirm(): Promise<void> {
    try {
      await this.store.heartbeat(this.key, this.fence, this.leaseMs);
    } catch (error) {
      if (error instanceof FencedOutError && !this.stopped) {
        this.stop();
        this.watch.fencedOut('heartbeat', error);
      }
      throw error;
    }
  }

  /** Stop beating. A heartbeat already in flight may still land; its answer is ignored. */
  stop(): void {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
  }

  private async beat(): Promise<void> {
    if (this.alsoOnBeat !== undefined) void this.alsoOnBeat().catch(() => undefined);
    try {
      const beat = await this.store.heartbeat(this.key, this.fence, this.leaseMs);
      if (beat.contested && !this.contestedReported && !this.stopped) {
        this.contestedReported = true;
        this.facts.contested(this.fence.attempt);
      }
    } catch (error) {
      if (this.stopped) return;
      if (error instanceof FencedOutError) {
        this.stop();
        this.watch.fencedOut('heartbeat', error);
        return;
      }
      this.facts.heartbeatFailed(this.fence.attempt, error);
    }
  }
}

/**
 * Make `target` abort (with the same reason) when `source` does. Returns a
 * function that removes the link. Cheaper than `AbortSignal.any`, which the
 * wrapper would otherwise create twice per call.
 */
export function forwardAbort(source: AbortSignal | undefined, target: AbortController): () => void {
  if (!source) return () => undefined;
  if (source.aborted) {
    target.abort(source.reason);
    return () => undefined;
  }
  const onAbort = () => target.abort(source.reason);
  source.addEventListener('abort', onAbort, { once: true });
  return () => source.removeEventListener('abort', onAbort);
}

/**
 * Abort state that makes its `AbortSignal` only when something reads
 * `signal`. A job and each executed call need one that follows its parent
 * (BullMQ's signal, the job's), yet most calls end without anyone asking for
 * the signal, and an AbortController with its listener link is among the
 * dearest things a call would otherwise create (the bench measures it).
 * `aborted` and `reason` read through to the parent without making anything.
 *
 * The first abort wins: its reason is the one every reader sees, whether it
 * came from the parent or from {@link abort}.
 */
export class LazyAbort implements CallAbort {
  #controller: AbortController | undefined;
  #unlink: (() => void) | undefined;
  #aborted = false;
  #reason: unknown;

  constructor(private readonly parent?: AbortSignal | CallAbort) {}

  get aborted(): boolean {
    return this.#aborted || (this.parent?.aborted ?? false);
  }

  get reason(): unknown {
    return this.#aborted ? this.#reason : this.parent?.reason;
  }

  /** A real signal, made on first read, linked to the parent's until {@link dispose}. */
  get signal(): AbortSignal {
    if (this.#controller === undefined) {
      const controller = new AbortController();
      this.#controller = controller;
      if (this.aborted) controller.abort(this.reason);
      else if (this.parent) this.#unlink = forwardAbort(this.parent instanceof AbortSignal ? this.parent : this.parent.signal, controller);
    }
    return this.#controller.signal;
  }

  /** Aborts with `reason` unless already aborted (by the parent or earlier). */
  abort(reason: unknown): void {
    if (this.aborted) return;
    this.#aborted = true;
    this.#reason = reason;
    this.#controller?.abort(reason);
  }

  throwIfAborted(): void {
    if (this.aborted) throw this.reason;
  }

  /** Removes the link to the parent's signal, if a signal was made. */
  dispose(): void {
    this.#unlink?.();
    this.#unlink = undefined;
  }
}

/** The steps of an execution with none recorded before it (a first attempt, a read-only call). */
export const NO_STEPS: Readonly<Record<string, unknown>> = Object.freeze({});

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
  readonly recordedSteps: Readonly<Record<string, unknown>>;
  /** Told when a step write finds the fence closed (`null` for a read-only call, which writes none). */
  readonly watch: FenceWatch | null;
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
        if (error instanceof FencedOutError) input.watch?.fencedOut('step', error);
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
