/**
 * The OpenTelemetry SDK as a host would set it up, with in-memory exporters
 * the tests read: a global AsyncLocalStorage context manager and tracer
 * provider (BullMQ's telemetry and ours both use the globals), and meters
 * whose readers collect on demand.
 */
import { context, trace, type Attributes, type Meter } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { MeterProvider, MetricReader, type DataPoint, type Histogram } from '@opentelemetry/sdk-metrics';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { afterAll, beforeAll, beforeEach } from 'vitest';

class OnDemandReader extends MetricReader {
  protected async onShutdown(): Promise<void> {}
  protected async onForceFlush(): Promise<void> {}
}

export interface OtelSdk {
  readonly spans: InMemorySpanExporter;
  shutdown(): Promise<void>;
}

/** A meter of its own (so each test counts only its own calls) and what it recorded. */
export interface TestMeter {
  readonly meter: Meter;
  /** Data points of one metric, as collected now (empty when it has none). */
  points(metric: string): Promise<DataPoint<unknown>[]>;
}

export function testMeter(): TestMeter {
  const reader = new OnDemandReader();
  const provider = new MeterProvider({ readers: [reader] });
  return {
    meter: provider.getMeter('test'),
    async points(metric) {
      const { resourceMetrics } = await reader.collect();
      const found = resourceMetrics.scopeMetrics.flatMap((s) => s.metrics).filter((m) => m.descriptor.name === metric);
      return found.flatMap((m) => m.dataPoints as DataPoint<unknown>[]);
    },
  };
}

export function startOtelSdk(): OtelSdk {
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  const spans = new InMemorySpanExporter();
  const tracerProvider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(spans)] });
  trace.setGlobalTracerProvider(tracerProvider);
  return {
    spans,
    async shutdown() {
      await tracerProvider.shutdown();
      trace.disable();
      context.disable();
    },
  };
}

/** The sum of counter points whose attributes include `match`. */
/** The SDK for one test file: started before its tests, its spans cleared before each, shut down after them. */
export function useOtelSdk(): { readonly spans: InMemorySpanExporter } {
  let sdk: OtelSdk | undefined;
  beforeAll(() => {
    sdk = startOtelSdk();
  });
  afterAll(async () => {
    await sdk?.shutdown();
  });
  beforeEach(() => sdk?.spans.reset());
  return {
    get spans() {
      if (sdk === undefined) throw new Error('useOtelSdk: the spans are there once a test runs');
      return sdk.spans;
    },
  };
}

export function sumWhere(points: DataPoint<unknown>[], match: Attributes): number {
  return points
    .filter((p) => Object.entries(match).every(([k, v]) => p.attributes[k] === v))
    .reduce((total, p) => total + (p.value as number), 0);
}

/** The number of recordings of histogram points whose attributes include `match`. */
export function countWhere(points: DataPoint<unknown>[], match: Attributes): number {
  return points
    .filter((p) => Object.entries(match).every(([k, v]) => p.attributes[k] === v))
    .reduce((total, p) => total + (p.value as Histogram).count, 0);
}

/** The finished spans carrying attribute `key` = `value`. */
export function spansWhere(spans: InMemorySpanExporter, key: string, value: unknown): ReadableSpan[] {
  return spans.getFinishedSpans().filter((s) => s.attributes[key] === value);
}
