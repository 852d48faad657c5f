/**
 * The limits' OpenTelemetry gauges: what each limit's current window has
 * used and has left, read on the server clock at each collection. A global
 * limit is one series; a tenant's limit is one series per tenant this worker
 * has seen call lately, and only with `tenantInMetrics` (every tenant is a
 * new series, as for the other metrics); a run's limit has no gauge (runs
 * are too many: `tool-receipts limits` lists them). An in-flight cap reports
 * on the same gauges: the slots held by live leases as used, the free ones
 * as left.
 */
import type { Attributes, Meter } from '@opentelemetry/api';
import type { WorkerLimits } from '../limits/call-limits.js';
import type { InFlightCap } from '../limits/caps.js';
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
  private async read(): Promise<{ usage: Pick<LimitUsage, 'used' | 'left'>; attributes: Attributes }[]> {
    const subjects = (limit: Pick<Limit, 'per'>): { tenantId?: string }[] =>
      limit.per === 'global' ? [{}] : limit.per === 'tenant' ? [...this.tenants].map((tenantId) => ({ tenantId })) : [];
    const store = this.limits.store;
    const capUsage = async (cap: InFlightCap, subject: { tenantId?: string }) => {
      const { held } = await store.caps.usage(cap, subject);
      return { used: held, left: Math.max(0, cap.concurrency - held) };
    };
    const counts: {
      limit: Pick<Limit, 'name' | 'per'>;
      usage: (subject: { tenantId?: string }) => Promise<Pick<LimitUsage, 'used' | 'left'>>;
    }[] = [
      ...this.limits.all.map((limit) => ({ limit, usage: (subject: { tenantId?: string }) => store.usage(limit, subject) })),
      ...this.limits.caps.map((cap) => ({ limit: cap, usage: (subject: { tenantId?: string }) => capUsage(cap, subject) })),
    ];
    const reads = counts.flatMap(({ limit, usage }) =>
      subjects(limit).map(async (subject) => ({
        usage: await usage(subject),
        attributes: {
          [ATTR.limit]: limit.name,
          [ATTR.limitPer]: limit.per,
          [ATTR.prefix]: store.prefix,
          ...(subject.tenantId !== undefined ? { [ATTR.tenant]: subject.tenantId } : {}),
        },
      })),
    );
    const settled = await Promise.allSettled(reads);
    return settled.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []));
  }
}
