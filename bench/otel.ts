/**
 * The OpenTelemetry SDK the traced bench passes run on: what a host sets up
 * (AsyncLocalStorage context manager, a batching span processor, a meter
 * provider), with an exporter that only counts what it is handed, so the
 * figure is the cost of making spans and metrics, not of shipping them.
 */
import { context, type Meter, type Tracer } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { MeterProvider, MetricReader } from '@opentelemetry/sdk-metrics';
import { BasicTracerProvider, BatchSpanProcessor, type ReadableSpan, type SpanExporter } from '@opentelemetry/sdk-trace-base';

class CountingExporter implements SpanExporter {
  count = 0;
  export(spans: ReadableSpan[], done: (result: { code: 0 }) => void): void {
    this.count += spans.length;
    done({ code: 0 });
  }
  async shutdown(): Promise<void> {}
}

class IdleReader extends MetricReader {
  protected async onShutdown(): Promise<void> {}
  protected async onForceFlush(): Promise<void> {}
}

/**
 * The SDK for the traced passes. The context manager is installed only
 * around them (`enterPass` / `leavePass`): AsyncLocalStorage hooks every
 * promise in the process once enabled, and the other passes must not pay for it.
 */
export function startBenchOtel(): {
  tracer: Tracer;
  meter: Meter;
  enterPass(): void;
  leavePass(): void;
  exported(): number;
  flush(): Promise<void>;
  shutdown(): Promise<void>;
} {
  const exporter = new CountingExporter();
  const tracerProvider = new BasicTracerProvider({ spanProcessors: [new BatchSpanProcessor(exporter)] });
  const meterProvider = new MeterProvider({ readers: [new IdleReader()] });
  return {
    tracer: tracerProvider.getTracer('bench'),
    meter: meterProvider.getMeter('bench'),
    enterPass: () => void context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable()),
    leavePass: () => context.disable(),
    exported: () => exporter.count,
    flush: () => tracerProvider.forceFlush(),
    async shutdown() {
      await tracerProvider.shutdown();
      await meterProvider.shutdown();
    },
  };
}
