import { createHash } from 'node:crypto';
import { toolCallReceiptKeyString, type ToolCallReceiptKey } from '../core/identity.js';
import { FencedOutError, type AttemptFence } from '../redis/errors.js';
import type { Logger } from 'pino';
import type { ReceiptStore } from '../redis/receipt-store.js';
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
  let recorded: Map<string, unknown> | undefined;
  return {
    // Getters: most tools read neither, and each costs an allocation per call to make.
    get signal() {
      return input.abort.signal;
    },
    get logger() {
      return input.logger();
    },
    attempt: input.attempt,
    tenantId: input.tenantId,
    runId: input.runId,
    sessionId: input.sessionId,
    callId: input.callId,
    job: input.job,
    // Computed on first read: most tools never ask for it.
    get idempotencyKey() {
      return idempotencyKeyFor(input.key);
    },
    async step<T>(name: string, fn: () => T | Promise<T>): Promise<T> {
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
    },
  };
}
