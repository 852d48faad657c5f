/**
 * The `ctx` a tool's `execute` gets: its idempotency key, abort signal,
 * logger, and the fenced steps a resumable effect records.
 */
import { createHash } from 'node:crypto';
import { toolCallReceiptKeyString, type ToolCallReceiptKey } from '../core/identity.js';
import { FencedOutError, type AttemptFence } from '../redis/errors.js';
import type { Logger } from 'pino';
import type { ReceiptStore } from '../redis/receipts/store.js';
import type { LazyAbort } from './abort.js';
import type { ToolContext } from './define-tool.js';

/** A stable idempotency key for every attempt of one call: a digest of the receipt key. */
export function idempotencyKeyFor(key: ToolCallReceiptKey): string {
  return `trc_${createHash('sha256').update(toolCallReceiptKeyString(key), 'utf8').digest('hex').slice(0, 40)}`;
}

/** Everything needed to build the `ctx` of one execution. */
export interface CallContextInput extends Pick<ToolContext, 'attempt' | 'tenantId' | 'runId' | 'sessionId' | 'callId' | 'job'> {
  /** The execution's abort; `ctx.signal` is its signal, made when the tool first reads it. */
  readonly abort: LazyAbort;
  /** The call's logger, made when first asked for. */
  readonly logger: () => Logger;
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
 * Build the {@link ToolContext} of one execution. `step` replays a value an
 * earlier attempt recorded, and otherwise runs the sub-operation and records
 * its value under this attempt's fence before returning it.
 */
export function createToolContext(input: CallContextInput): ToolContext {
  return new ExecutionContext(input);
}

/**
 * A class, not an object literal: a literal with getters costs about 0.7 µs
 * to make (each getter a closure of its own), this about 0.02. `signal`,
 * `logger` and `idempotencyKey` are getters on the prototype, made on first
 * read (most tools read none of them); `step` is the instance's own, so a
 * tool may take it out of `ctx` (`{ step }`).
 */
class ExecutionContext implements ToolContext {
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
    return this.#input.logger();
  }

  /** Computed on each read from the receipt key: most tools never ask for it. */
  get idempotencyKey(): string {
    return idempotencyKeyFor(this.#input.key);
  }
}
