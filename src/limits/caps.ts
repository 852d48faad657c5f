/**
 * In-flight caps as a team declares them: at most `concurrency` executions
 * of the tools a cap covers at once, per tenant, run or the whole fleet.
 * Pure: the definition's and the checked cap's types, and telling a cap
 * from a window. How the slots are held is in `./cap-store.ts` and
 * `./cap-call.ts`; docs/limits.md (in-flight caps) says what holds.
 */
import { ToolReceiptsError } from '../core/errors.js';
import type { LimitScope, OnLimit } from './kinds.js';

/**
 * An in-flight cap, as given in `limits: [...]`: at most `concurrency`
 * executions at once per `per`, from the claim that starts an execution to
 * its settle. It takes no window (`max`, `windowMs`, `kind`, `burst`) and no
 * `cost`: a cap counts calls in flight, one each.
 *
 * ```ts
 * const browsing = { name: 'browse', per: 'tenant', concurrency: 3, tools: ['browse'], onLimit: 'wait' } as const;
 * ```
 */
export interface InFlightCapDefinition {
  /** Its name, unique among a worker's limits and caps (the rules of a limit's name). */
  name: string;
  /** Whose calls share its slots. */
  per: LimitScope;
  /** The most executions in flight at once: a whole number, at least 1. */
  concurrency: number;
  /** The tools it covers, by name; left out (or `undefined`), every tool. */
  tools?: readonly string[] | undefined;
  /**
   * What a call that finds every slot taken does: `'refuse'` (default)
   * answers the model with a sentence; `'wait'` parks the job until a slot
   * frees, and waiting calls get slots in arrival order.
   */
  onLimit?: OnLimit | undefined;
  max?: undefined;
  windowMs?: undefined;
  kind?: undefined;
  burst?: undefined;
  cost?: undefined;
}

/** A checked {@link InFlightCapDefinition}, with its defaults filled in. */
export interface InFlightCap extends InFlightCapDefinition {
  readonly name: string;
  readonly per: LimitScope;
  readonly concurrency: number;
  /** `undefined` for every tool. */
  readonly tools: readonly string[] | undefined;
  readonly onLimit: OnLimit;
}

/** Whether a checked limit is an in-flight cap (it has a `concurrency`) rather than a window. */
export function isCap<L extends { readonly concurrency?: number | undefined }>(limit: L): limit is Extract<L, InFlightCap> {
  return limit.concurrency !== undefined;
}

/**
 * The slot of an in-flight cap that an executing call held is held no
 * more (its lease passed on the server clock, or its renewals failed for
 * long enough that it may have), so the call's tool is asked to stop, as
 * it is when its receipt's lease is lost: the cap must never count a call
 * as done while it may still run.
 */
export class CapSlotLostError extends ToolReceiptsError {
  readonly code = 'limit.slot_lost';
  constructor(
    /** The tool call whose slot was lost. */
    readonly callId: string,
  ) {
    super(
      `tool call ${callId} no longer surely holds its slot of an in-flight cap (its lease passed, or could not be renewed in time); stopping it`,
    );
  }
}
