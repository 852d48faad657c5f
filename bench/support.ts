/**
 * Helpers shared by the benchmarks: a worker run until its jobs are done, a bounded-concurrency rate meter, the
 * median, a tool result of a realistic size, the server's version, and removal of one run's keys from a server
 * the bench does not own.
 */
import type { Worker } from 'bullmq';
import type { Redis } from 'ioredis';

/**
 * Runs a worker made with `autorun: false` until `jobs` of its jobs have
 * completed or failed; returns the seconds that took. Throws, naming `label`,
 * when any failed.
 */
export async function drainJobs(worker: Worker, jobs: number, label: string): Promise<number> {
  let done = 0;
  const failures: string[] = [];
  const finished = new Promise<void>((resolve) => {
    const tally = () => void (++done === jobs && resolve());
    worker.on('completed', tally);
    worker.on('failed', (_job, error) => {
      failures.push(error.message);
      tally();
    });
  });
  await worker.waitUntilReady();
  const started = performance.now();
  void worker.run();
  await finished;
  const seconds = (performance.now() - started) / 1000;
  if (failures.length > 0) throw new Error(`${label}: ${failures.length} jobs failed, first: ${failures[0]}`);
  return seconds;
}

/** Runs `op(0..count-1)` with at most `concurrency` in flight; returns calls per second. */
export async function throughput(count: number, concurrency: number, op: (i: number) => Promise<void>): Promise<number> {
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < count) await op(next++);
    }),
  );
  return count / ((performance.now() - started) / 1000);
}

/** The middle value (the upper one of the two middles for an even count); 0 for none. */
export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? 0;
}

/** `redis_version` from INFO server, or `?`. */
export async function redisVersion(redis: Redis): Promise<string> {
  const info = await redis.info('server');
  return /redis_version:(\S+)/.exec(info)?.[1] ?? '?';
}

/** Unlinks every key matching `pattern` (SCAN, not KEYS): cleanup on a server the bench shares. */
export async function unlinkMatching(redis: Redis, pattern: string): Promise<void> {
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
    cursor = next;
    if (keys.length > 0) await redis.unlink(...keys);
  } while (cursor !== '0');
}

/** Calls per command from INFO commandstats (`cmdstat_evalsha:calls=12,...` → `{ evalsha: 12 }`). */
export async function commandCalls(redis: Redis): Promise<Map<string, number>> {
  const info = await redis.info('commandstats');
  const calls = new Map<string, number>();
  for (const match of info.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) {
    calls.set(match[1] ?? '', Number(match[2]));
  }
  return calls;
}

/** `after - before` per command, zeros dropped. */
export function callsDelta(before: Map<string, number>, after: Map<string, number>): Map<string, number> {
  const delta = new Map<string, number>();
  for (const [name, calls] of after) {
    const d = calls - (before.get(name) ?? 0);
    if (d > 0) delta.set(name, d);
  }
  return delta;
}

/** A rate as a whole number, right-aligned to `width`. */
export const rate = (value: number, width = 8): string => value.toFixed(0).padStart(width);

/** A tool result of a realistic size: an email API's answer, about 300 bytes of JSON. */
export function realisticResult(i: number): Record<string, unknown> {
  return {
    ok: true,
    messageId: `msg-${String(i).padStart(10, '0')}`,
    threadId: `thr-${String(i * 7).padStart(10, '0')}`,
    to: [`user${i}@example.com`],
    subject: `Your order #${100000 + i} has shipped`,
    acceptedAt: '2026-12-02T01:45:00.000Z',
    provider: { name: 'mailer', region: 'eu-west-1', requestId: `req-${(i * 2654435761) % 4294967296}` },
    labels: ['transactional', 'orders'],
  };
}

/**
 * The encoding limits a deployment can raise so a receipt hash holding a
 * result of a few hundred bytes, and a run's sorted sets named by whole
 * receipt keys, stay listpacks (docs/redis.md#memory): measured beside the
 * server's defaults by the memory and layout benches.
 */
export const LISTPACK_SETTINGS: Readonly<Record<string, string>> = {
  'hash-max-listpack-value': '1024',
  'zset-max-listpack-value': '256',
};

/** The server's current values of `names` (CONFIG GET), to put back after a pass under other settings. */
export async function serverSettings(redis: Redis, names: readonly string[]): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const name of names) {
    const reply = (await redis.call('CONFIG', 'GET', name)) as string[];
    if (reply[1] !== undefined) out[name] = reply[1];
  }
  return out;
}

/** CONFIG SET of each of `settings`, in order. */
export async function applySettings(redis: Redis, settings: Readonly<Record<string, string>>): Promise<void> {
  for (const [name, value] of Object.entries(settings)) await redis.call('CONFIG', 'SET', name, value);
}
