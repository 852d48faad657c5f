/**
 * The OpenTelemetry observer: one span per tool call and the wrapper's
 * metrics, through `@opentelemetry/api` only (the host brings the SDK).
 * Over 300 lines: one short method per milestone of a call, beside the metrics they feed.
 */
import {
  context,
  metrics,
  SpanStatusCode,
  trace,
  type Attributes,
  type Counter,
  type Histogram,
  type Meter,
  type ObservableResult,
  type Span,
  type Tracer,
} from '@opentelemetry/api';
import type {
  CallObservation,
  ObservedCall,
  ObservedDecision,
  ObservedEnd,
  ObserverBinding,
  ReceiptRoundTrip,
  ToolCallObserver,
} from '../bullmq/call/facts.js';
import { ATTR, EVENT, METRIC, SCOPE } from './names.js';
import { DEFAULT_OPEN_INDEX_SHARDS, OpenReceiptIndex } from './open-receipts.js';
import { outcomeOf, type SeenMilestones } from './outcome.js';
import { LimitGauges } from './limit-gauges.js';

/** Options of {@link toolReceiptsOtel}. */
export interface ToolReceiptsOtelOptions {
  /** Default: `trace.getTracer('bullmq-tool-receipts')` from the global provider. */
  readonly tracer?: Tracer;
  /** Default: `metrics.getMeter('bullmq-tool-receipts')` from the global provider. */
  readonly meter?: Meter;
  /**
   * Add the tenant to metric attributes (spans always carry it). Off by
   * default: every tenant is a new time series, and how many you can afford
   * is your call.
   */
  readonly tenantInMetrics?: boolean;
  /**
   * Keep the index of open receipts and observe the ambiguous-receipts gauge
   * (two extra one-key writes per executed call, not awaited). Default true.
   */
  readonly ambiguousGauge?: boolean;
  /** Shards of the open-receipt index per prefix. Default 16. */
  readonly openIndexShards?: number;
  /**
   * A child span per receipt round trip (`tool_receipts.claim`, `.complete`,
   * `.completeAndClaim`, `.claimGroup`, `.fail`). Off by default: it doubles the spans per call for script calls
   * whose time the overhead histogram already shows.
   */
  readonly roundTripSpans?: boolean;
}

interface Instruments {
  readonly calls: Counter;
  readonly toolDuration: Histogram;
  readonly overhead: Histogram;
  readonly fencedOut: Counter;
  readonly lateSettles: Counter;
}

function instrumentsOf(meter: Meter): Instruments {
  return {
    calls: meter.createCounter(METRIC.calls, {
      description: 'Tool calls the wrapper answered, by tool, decision and outcome',
      unit: '{call}',
    }),
    toolDuration: meter.createHistogram(METRIC.toolDuration, {
      description: "Time the tool's own execute took, for calls that ran it",
      unit: 's',
    }),
    overhead: meter.createHistogram(METRIC.overhead, {
      description: "The wrapper's own time per call: the whole call minus the tool's execute",
      unit: 's',
    }),
    fencedOut: meter.createCounter(METRIC.fencedOut, {
      description: 'Attempts that found another attempt had taken their receipt over',
      unit: '{attempt}',
    }),
    lateSettles: meter.createCounter(METRIC.lateSettles, {
      description: 'Settles that came after a claim had reported the call ambiguous',
      unit: '{settle}',
    }),
  };
}

/** One call's span and metric bookkeeping. */
class OtelCallObservation implements CallObservation {
  private readonly started = performance.now();
  private toolSeconds: number | undefined;
  private decision: ObservedDecision | undefined;
  private waited = false;
  private wasFencedOut = false;
  private wasAborted = false;
  private unknownOutcome = false;
  private settledAs: SeenMilestones['settled'];
  private errorRecorded = false;

  constructor(
    private readonly owner: OtelObserver,
    private readonly call: ObservedCall,
    private readonly span: Span,
  ) {}

  decided(decision: ObservedDecision): void {
    this.decision = decision;
    this.span.setAttribute(ATTR.decision, decision.decision);
    if (decision.attempt !== undefined) this.span.setAttribute(ATTR.attempt, decision.attempt);
    // The claim settled a lost attempt on its way to this decision: say how, before the decision's own event.
    if (decision.reconciled !== undefined) this.span.addEvent(EVENT.reconcile, { [ATTR.verdict]: decision.reconciled });
    if (decision.keyedRerun) this.span.addEvent(EVENT.keyedRerun);
    if (decision.decision === 'ambiguous') this.span.addEvent(EVENT.ambiguous, { reason: decision.reason ?? '' });
    if (decision.receiptKey === undefined) return;
    this.span.setAttribute(ATTR.receiptKey, decision.receiptKey);
    if (decision.decision === 'ambiguous' || decision.decision === 'execute') this.owner.openIndex?.add(decision.receiptKey);
  }

  async runTool<T>(fn: () => Promise<T>): Promise<T> {
    const started = performance.now();
    try {
      // The tool's own instrumentation (HTTP clients, SDKs) nests under this call's span.
      return await context.with(trace.setSpan(context.active(), this.span), fn);
    } finally {
      this.toolSeconds = (performance.now() - started) / 1000;
    }
  }

  async roundTrip<T>(name: ReceiptRoundTrip, fn: () => Promise<T>): Promise<T> {
    if (!this.owner.roundTripSpans) return fn();
    const parent = trace.setSpan(context.active(), this.span);
    const span = this.owner.tracer.startSpan(`tool_receipts.${name}`, {}, parent);
    try {
      return await context.with(trace.setSpan(parent, span), fn);
    } catch (error) {
      span.recordException(error instanceof Error ? error : String(error));
      span.setStatus({ code: SpanStatusCode.ERROR, message: error instanceof Error ? error.message : String(error) });
      throw error;
    } finally {
      span.end();
    }
  }

  approval(state: 'requested' | 'approved' | 'denied' | 'expired'): void {
    this.span.addEvent(EVENT.approval, { [ATTR.approval]: state });
  }

  waiting(delayMs: number): void {
    this.waited = true;
    this.span.addEvent(EVENT.wait, { delay_ms: delayMs });
  }

  // A job parked on a limit says so only here, once it is parked: the DelayedError that follows is no failure.
  answered(_decision: string, outcome: string): void {
    if (outcome === 'waited') this.waited = true;
  }

  overLimit(limit: string, onLimit: string, retryAtMs: number): void {
    this.span.addEvent(EVENT.overLimit, { [ATTR.limit]: limit, [ATTR.onLimit]: onLimit, [ATTR.retryAtMs]: retryAtMs });
  }

  fencedOut(during: string): void {
    this.wasFencedOut = true;
    this.span.addEvent(EVENT.fencedOut, { [ATTR.during]: during });
    this.owner.instruments.fencedOut.add(1, { ...this.owner.metricBase(this.call), [ATTR.during]: during });
  }

  aborted(reason: unknown): void {
    this.wasAborted = true;
    this.span.addEvent(EVENT.abort, { reason: reason instanceof Error ? reason.message : String(reason) });
  }

  outcomeUnknown(error: unknown): void {
    // The receipt stays running (an opaque one is now ambiguous), so its index entry stays too.
    this.unknownOutcome = true;
    this.span.setAttribute(ATTR.tier, 'outcomeUnknown');
    this.span.addEvent(EVENT.outcomeUnknown);
    this.recordError(error);
  }

  lateSettle(outcome: 'executed' | 'failed'): void {
    this.span.addEvent(EVENT.lateSettle, { [ATTR.outcome]: outcome });
    this.owner.instruments.lateSettles.add(1, { ...this.owner.metricBase(this.call), [ATTR.outcome]: outcome });
  }

  settled(outcome: 'executed' | 'failed', failure?: { readonly tier: string; readonly error: unknown }): void {
    this.settledAs = outcome;
    if (failure) {
      this.span.setAttribute(ATTR.tier, failure.tier);
      this.recordError(failure.error);
    }
    if (this.decision?.receiptKey !== undefined) this.owner.openIndex?.remove(this.decision.receiptKey);
  }

  private recordError(error: unknown): void {
    this.errorRecorded = true;
    this.span.recordException(error instanceof Error ? error : String(error));
  }

  ended(end: ObservedEnd): void {
    const outcome = outcomeOf(end, {
      decision: this.decision?.decision,
      waited: this.waited,
      fencedOut: this.wasFencedOut,
      aborted: this.wasAborted,
      outcomeUnknown: this.unknownOutcome,
      settled: this.settledAs,
    });
    const decision = this.decision?.decision ?? (end.result?.outcome === 'rejected' ? 'reject' : 'none');
    this.span.setAttribute(ATTR.outcome, outcome);
    if (!this.decision) this.span.setAttribute(ATTR.decision, decision);
    if (end.error !== undefined && outcome !== 'waited' && !this.errorRecorded) this.recordError(end.error);
    if (outcome === 'executed' || outcome === 'replayed' || outcome === 'waited') {
      this.span.setStatus({ code: SpanStatusCode.OK });
    } else {
      const message = end.error instanceof Error ? end.error.message : (end.result?.content ?? outcome);
      this.span.setStatus({ code: SpanStatusCode.ERROR, message });
    }
    this.span.end();

    const seconds = (performance.now() - this.started) / 1000;
    const base = this.owner.metricBase(this.call);
    this.owner.instruments.calls.add(1, { ...base, [ATTR.decision]: decision, [ATTR.outcome]: outcome });
    if (this.toolSeconds !== undefined) {
      this.owner.instruments.toolDuration.record(this.toolSeconds, { ...base, [ATTR.outcome]: outcome });
    }
    this.owner.instruments.overhead.record(Math.max(0, seconds - (this.toolSeconds ?? 0)), {
      ...base,
      [ATTR.decision]: decision,
    });
  }
}

/** The {@link ToolCallObserver} {@link toolReceiptsOtel} returns. */
export class OtelObserver implements ToolCallObserver {
  /** @internal The metric instruments, made once per observer. */
  readonly instruments: Instruments;
  /** Set once bound to a wrapper with the gauge on. */
  openIndex: OpenReceiptIndex | undefined;
  /** Set once bound to a wrapper with limits. */
  private limitGauges: LimitGauges | undefined;
  readonly tracer: Tracer;
  readonly roundTripSpans: boolean;
  private readonly meter: Meter;
  private readonly tenantInMetrics: boolean;

  constructor(private readonly options: ToolReceiptsOtelOptions = {}) {
    this.tracer = options.tracer ?? trace.getTracer(SCOPE);
    this.meter = options.meter ?? metrics.getMeter(SCOPE);
    this.tenantInMetrics = options.tenantInMetrics ?? false;
    this.roundTripSpans = options.roundTripSpans ?? false;
    this.instruments = instrumentsOf(this.meter);
  }

  bind({ redis, store, limits }: ObserverBinding): void {
    if (limits !== undefined && this.limitGauges === undefined)
      this.limitGauges = new LimitGauges(this.meter, limits, this.tenantInMetrics);
    if ((this.options.ambiguousGauge ?? true) === false || this.openIndex) return;
    const index = new OpenReceiptIndex(redis, store, this.options.openIndexShards ?? DEFAULT_OPEN_INDEX_SHARDS);
    this.openIndex = index;
    const gauge = this.meter.createObservableGauge(METRIC.ambiguous, {
      description: 'Ambiguous receipts under the prefix, among those the observed workers left running',
      unit: '{receipt}',
    });
    gauge.addCallback(async (result: ObservableResult) => {
      // A scrape that cannot reach Redis reports nothing rather than a wrong zero.
      const count = await index.countAmbiguous().catch(() => undefined);
      if (count !== undefined) result.observe(count, { [ATTR.prefix]: index.prefix });
    });
  }

  metricBase(call: ObservedCall): Attributes {
    return this.tenantInMetrics ? { [ATTR.tool]: call.tool, [ATTR.tenant]: call.tenantId } : { [ATTR.tool]: call.tool };
  }

  callStarted(call: ObservedCall): CallObservation {
    this.limitGauges?.saw(call.tenantId);
    // Started in the active context: under BullMQ's job span when its telemetry is on, a root span otherwise.
    const span = this.tracer.startSpan(
      call.tool,
      {
        attributes: {
          [ATTR.tenant]: call.tenantId,
          [ATTR.run]: call.runId,
          [ATTR.tool]: call.tool,
          [ATTR.callId]: call.callId,
          ...(call.jobId !== undefined ? { [ATTR.jobId]: call.jobId } : {}),
        },
      },
      context.active(),
    );
    return new OtelCallObservation(this, call, span);
  }
}

/**
 * An OpenTelemetry observer for `withToolReceipts({ telemetry })`: a span per
 * tool call (a child of BullMQ's job span when `bullmq-otel` telemetry is on)
 * and the metrics listed in docs/observability.md. Uses the
 * global tracer and meter providers unless given a tracer or meter. One
 * observer per wrapper.
 */
export function toolReceiptsOtel(options?: ToolReceiptsOtelOptions): ToolCallObserver {
  return new OtelObserver(options);
}
