/**
 * The limits' OpenTelemetry gauges: what each limit's current window has
 * used and has left, read on the server clock at each collection. A global
 * limit is one series; a tenant's limit is one series per tenant this worker
 * has seen call lately, and only with `tenantInMetrics` (every tenant is a
 * new series, as for the other metrics); a run's limit has no gauge (runs
 * are too many: `tool-receipts limits` lists them).
 */
import type { Attributes, Meter } from '@opentelemetry/api';
import type { WorkerLimits } from '../limits/call-limits.js';
import type { Limit } from '../limits/definitions.js';
import type { LimitUsage } from '../limits/answers.js';
import { ATTR, METRIC } from './names.js';

/** Tenants kept as recently seen, at most; the oldest seen is dropped first. */
const SEEN_TENANTS = 1000;

/** The gauges of one worker's limits, and the tenants they report. */
export class LimitGauges {
  private readonly tenants = new Set<string>();

  constructor(
    meter: Meter,
    private readonly limits: WorkerLimits,
    private readonly tenantInMetrics: boolean,
  ) {
    const used = meter.createObservableGauge(METRIC.limitUsed, {
      description: "What a limit's current window has used: committed, and held by live reservations",
      unit: '{unit}',
    });
    const left = meter.createObservableGauge(METRIC.limitLeft, {
      description: "What a limit's current window has left",
      unit: '{unit}',
    });
    meter.addBatchObservableCallback(
      async (result) => {
        for (const { usage, attributes } of await this.read()) {
          result.observe(used, usage.used, attributes);
          result.observe(left, usage.left, attributes);
        }
      },
      [used, left],
    );
  }

  /** A call of `tenantId` started: its tenant's counts are reported from now on. */
  saw(tenantId: string): void {
    if (!this.tenantInMetrics || this.tenants.has(tenantId)) return;
    this.tenants.add(tenantId);
    if (this.tenants.size > SEEN_TENANTS) this.tenants.delete(this.tenants.values().next().value!);
  }

  /** Every count to report, read now; one that cannot be read (Redis down) is left out rather than reported wrong. */
  private async read(): Promise<{ usage: LimitUsage; attributes: Attributes }[]> {
    const subjects = (limit: Limit): { tenantId?: string }[] =>
      limit.per === 'global' ? [{}] : limit.per === 'tenant' ? [...this.tenants].map((tenantId) => ({ tenantId })) : [];
    const reads = this.limits.all.flatMap((limit) =>
      subjects(limit).map(async (subject) => ({
        usage: await this.limits.store.usage(limit, subject),
        attributes: {
          [ATTR.limit]: limit.name,
          [ATTR.limitPer]: limit.per,
          [ATTR.prefix]: this.limits.store.prefix,
          ...(subject.tenantId !== undefined ? { [ATTR.tenant]: subject.tenantId } : {}),
        },
      })),
    );
    const settled = await Promise.allSettled(reads);
    return settled.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []));
  }
}
