/**
 * The peer the bench compares against: AWS Powertools' idempotency utility
 * (`makeIdempotent`) with its Redis persistence layer (`CachePersistenceLayer`),
 * over an ioredis connection to the same server. It is what a team would
 * reach for instead of this package, so its figures are taken in the same run.
 *
 * A fresh call costs it two round trips (SET NX EX, then SET EX with the
 * result); a replay also two (the SET NX that fails, then GET).
 */
import { IdempotencyConfig, makeIdempotent } from '@aws-lambda-powertools/idempotency';
import { CachePersistenceLayer } from '@aws-lambda-powertools/idempotency/cache';
import type { CacheClient } from '@aws-lambda-powertools/idempotency/types';
import type { Job } from 'bullmq';
import type { Redis } from 'ioredis';
import type { ToolJobData } from '../src/bullmq/job-data.js';

/** What the persistence layer asks of a client (`@redis/client`'s shape), on ioredis. */
export function ioredisCacheClient(redis: Redis): CacheClient {
  return {
    get: (name) => redis.get(name),
    async set(name, value, options) {
      const { EX, NX } = (options ?? {}) as { EX?: number; NX?: boolean };
      const key = String(name);
      const text = String(value);
      if (EX !== undefined && NX) return redis.set(key, text, 'EX', EX, 'NX');
      if (EX !== undefined) return redis.set(key, text, 'EX', EX);
      if (NX) return redis.set(key, text, 'NX');
      return redis.set(key, text);
    },
    del: (keys) => redis.del(...keys),
  };
}

/** One tool call as the peer sees it: everything that identifies the call is in the hashed payload. */
export interface PeerCall {
  readonly tenantId: string;
  readonly runId: string;
  readonly name: string;
  readonly input: unknown;
}

/** What `registerLambdaContext` reads: only the time left, which bounds an in-progress record. */
type LambdaContext = Parameters<IdempotencyConfig['registerLambdaContext']>[0];

/**
 * `run` made idempotent by Powertools, keyed under `<keyPrefix>#<md5 of the
 * payload>`, records kept `retentionSeconds`: the defaults a team would keep,
 * with the retention matched to ours. The registered context reports
 * `leaseMs` left, so an in-progress record expires like our lease (without
 * it Powertools warns on the console for every call).
 */
export function peerIdempotent<T>(
  redis: Redis,
  keyPrefix: string,
  times: { readonly retentionSeconds: number; readonly leaseMs: number },
  run: (call: PeerCall) => T | Promise<T>,
): (call: PeerCall) => Promise<T> {
  const persistenceStore = new CachePersistenceLayer({ client: ioredisCacheClient(redis) });
  const config = new IdempotencyConfig({ expiresAfterSeconds: times.retentionSeconds });
  config.registerLambdaContext({ getRemainingTimeInMillis: () => times.leaseMs } as LambdaContext);
  return makeIdempotent(async (call: PeerCall) => run(call), { persistenceStore, config, keyPrefix }) as (call: PeerCall) => Promise<T>;
}

/** A BullMQ processor wrapped in the peer: each call of the job runs through `makeIdempotent`, results as ours are shaped. */
export function peerProcessor(call: (call: PeerCall) => Promise<unknown>) {
  return async (job: Job<ToolJobData>) => {
    const { tenantId, runId, calls } = job.data;
    const results = [];
    for (const c of calls) {
      const value = await call({ tenantId, runId, name: c.name, input: c.input });
      results.push({ type: 'tool_result' as const, tool_use_id: c.id, content: JSON.stringify(value) });
    }
    return { results };
  };
}
