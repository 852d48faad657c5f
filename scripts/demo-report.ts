/**
 * What the demo prints besides its table: the legend, the progress line, and
 * the ambiguous receipts. Kept apart from the demo's process juggling so the
 * wording can be tested.
 */
import type { ReceiptRecord } from '../src/redis/index.js';

/** What each row of the demo's table means. */
export const DEMO_LEGEND: readonly string[] = [
  'executed:  the tool ran; its effect landed once',
  'replayed:  a redelivered or duplicate call got the recorded result without running',
  'waited:    a duplicate arrived while another worker held the live lease, and came back later',
  'reconcile: a worker died inside an opaque send_email; one worker asked the email provider (the',
  '           outbox) by idempotency key: sent -> the result is recorded and replayed; not sent -> the',
  '           call runs again as the next attempt. Only if it cannot tell is a person needed',
  'ambiguous: left for a person; the email may or may not have gone, so it was not sent again and',
  '           the job failed with the receipt key (only the demo can peek at the outbox to see which',
  '           had gone; the library cannot, so it does not guess)',
  'effects in the outbox: every side effect that landed, one entry each (an email sent, or one',
  '           step of a ticket: reserve, create, notify); a duplicate would be two entries for one call',
  'repeats absorbed by the ticket provider: a worker killed after a ticket step landed but before',
  '           the step was recorded runs that step again when the call is taken over; the provider',
  '           saw the same idempotency key and ignored the repeat, as real ticketing APIs do',
  'resumable create_ticket calls interrupted by a kill were taken over and finished step by step',
];

/** One line of progress: jobs finished out of all, and kills so far. */
export function progressLine(done: number, total: number, kills: number, elapsedMs: number): string {
  return `  ${String(done).padStart(String(total).length)} / ${total} jobs done, ${kills} workers SIGKILLed so far (${(elapsedMs / 1000).toFixed(0)} s)`;
}

const iso = (ms: number | null) => (ms === null ? '-' : new Date(ms).toISOString());

/**
 * The ambiguous receipts, at most `limit`: the fields an operator would read
 * with `redis-cli HGETALL`, printed here because a throwaway server is gone
 * once the demo ends. With a server that stays (`REDIS_URL`), also the
 * command to read each one there.
 */
export function ambiguousReceiptLines(records: readonly ReceiptRecord[], options: { serverKept: boolean; limit?: number }): string[] {
  const limit = options.limit ?? 5;
  const lines: string[] = [];
  for (const r of records.slice(0, limit)) {
    lines.push(`  ${r.redisKey}`);
    lines.push(`    tool ${r.key.toolName}, status ${r.status}, attempts ${r.attempts}, effect ${r.effect}, owner ${r.owner ?? '-'}`);
    lines.push(`    lease ended ${iso(r.leaseUntilMs)}, found ambiguous ${iso(r.ambiguousMs)}`);
    if (options.serverKept) lines.push(`    redis-cli HGETALL '${r.redisKey}'`);
  }
  if (records.length > limit) lines.push(`  ... and ${records.length - limit} more`);
  return lines;
}
