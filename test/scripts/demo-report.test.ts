import { describe, expect, it } from 'vitest';
import type { ReceiptRecord } from '../../src/redis/index.js';
import { ambiguousReceiptLines, DEMO_LEGEND, progressLine } from '../../scripts/demo-report.js';

const record = (n: number): ReceiptRecord => ({
  key: { tenantId: 'acme', runId: 'run-1', toolName: 'send_email', argsHash: `h${n}` },
  redisKey: `demo:rcpt:{acme|run-1}:send_email:h${n}`,
  status: 'running',
  attempts: 1,
  epoch: 'e',
  leaseUntilMs: 1_800_000_000_000,
  leaseExpired: true,
  owner: 'host:1:abcd',
  effect: 'opaque',
  createdMs: 1_799_999_999_000,
  updatedMs: 1_799_999_999_000,
  completedMs: null,
  error: null,
  tier: null,
  ambiguousMs: 1_800_000_001_000,
  resolvedMs: null,
  lateHeartbeatMs: null,
  lateSettle: null,
  steps: {},
  startedMs: 1_799_999_999_000,
  jobs: [],
  metJobs: [],
  reconciled: null,
  reconcilingUntilMs: null,
  keyedRerunMs: null,
  history: [],
  historyDropped: 0,
  ttlMs: 1000,
  readAtMs: 1_800_000_002_000,
});

describe('the demo report', () => {
  it('shows the fields of ambiguous receipts, and redis-cli commands only when the server outlives the demo', () => {
    const gone = ambiguousReceiptLines([record(1), record(2)], { serverKept: false }).join('\n');
    expect(gone).not.toContain('redis-cli');
    expect(gone).toContain('demo:rcpt:{acme|run-1}:send_email:h1');
    expect(gone).toContain('tool send_email, status running, attempts 1, effect opaque, owner host:1:abcd');
    expect(gone).toContain(`found ambiguous ${new Date(1_800_000_001_000).toISOString()}`);
    const kept = ambiguousReceiptLines([record(1)], { serverKept: true }).join('\n');
    expect(kept).toContain(`redis-cli HGETALL 'demo:rcpt:{acme|run-1}:send_email:h1'`);
    const many = ambiguousReceiptLines(
      Array.from({ length: 8 }, (_, i) => record(i)),
      { serverKept: false, limit: 3 },
    );
    expect(many.at(-1)).toBe('  ... and 5 more');
  });

  it('explains every row of the table it prints, the outbox and the absorbed repeats included', () => {
    const legend = DEMO_LEGEND.join('\n');
    for (const row of [
      'executed:',
      'replayed:',
      'waited:',
      'reconcile:',
      'ambiguous:',
      'effects in the outbox:',
      'repeats absorbed by the ticket provider:',
    ]) {
      expect(legend).toContain(row);
    }
  });

  it('reports progress as jobs done out of all, with the kills so far', () => {
    expect(progressLine(42, 400, 7, 12_300)).toBe('   42 / 400 jobs done, 7 workers SIGKILLed so far (12 s)');
  });
});
