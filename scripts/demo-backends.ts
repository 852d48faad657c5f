/**
 * Where the demo runs, from its environment:
 *
 *   DEMO_BACKEND=redis (default) | postgres   where BullMQ keeps the queue
 *     (postgres: BullMQ 6's createPostgresBackend on POSTGRES_URL, or a
 *     throwaway PostgreSQL cluster when initdb/pg_ctl are installed)
 *   DEMO_REDIS_CLIENT=ioredis (default) | node-redis   the client the
 *     receipts (and, on Redis, the queue) go through
 *
 * The receipts are on Redis either way. The demo's own scaffolding (its
 * outbox and counters) stays on ioredis: it plays the email and ticket
 * providers, not the library.
 */
import {
  createNodeRedisClient,
  createPostgresBackend,
  Queue,
  withBackend,
  Worker,
  type Processor,
  type QueueOptions,
  type WorkerOptions,
} from 'bullmq';
import { Redis } from 'ioredis';
import { createClient } from 'redis';
import type { RedisConnection } from '../src/redis/index.js';
import { postgresSkipReason, startPostgres } from '../test/support/postgres.js';

export type DemoBackend = 'redis' | 'postgres';
export type DemoClient = 'ioredis' | 'node-redis';

function choice<T extends string>(name: string, allowed: readonly T[]): T {
  const value = process.env[name] ?? allowed[0]!;
  if (!(allowed as readonly string[]).includes(value)) {
    console.error(`${name} must be one of ${allowed.join(', ')}; got ${JSON.stringify(value)}`);
    process.exit(2);
  }
  return value as T;
}

export const demoBackend = (): DemoBackend => choice('DEMO_BACKEND', ['redis', 'postgres'] as const);
export const demoClient = (): DemoClient => choice('DEMO_REDIS_CLIENT', ['ioredis', 'node-redis'] as const);

/** A PostgreSQL for DEMO_BACKEND=postgres: POSTGRES_URL if set, else a throwaway cluster. */
export async function postgresForScript(): Promise<{ url: string; stop: () => Promise<void> }> {
  if (process.env.POSTGRES_URL) {
    console.log('PostgreSQL: POSTGRES_URL (BullMQ creates its schema there; nothing is dropped)');
    return { url: process.env.POSTGRES_URL, stop: async () => undefined };
  }
  const skip = postgresSkipReason();
  if (skip !== undefined) {
    console.error(`No PostgreSQL: set POSTGRES_URL, or install the server binaries (${skip}).`);
    process.exit(2);
  }
  const handle = await startPostgres();
  console.log(`PostgreSQL: a throwaway cluster at 127.0.0.1:${handle.port}, removed at the end (set POSTGRES_URL to use your own)`);
  return { url: handle.url, stop: () => handle.stop() };
}

/** A connection for the receipts: an ioredis `Redis`, or a connected node-redis client. */
export async function receiptsConnection(client: DemoClient, url: string): Promise<RedisConnection> {
  if (client === 'ioredis') return new Redis(url, { maxRetriesPerRequest: null });
  const nodeRedis = createClient({ url });
  nodeRedis.on('error', () => undefined);
  await nodeRedis.connect();
  return nodeRedis as unknown as RedisConnection;
}

interface Where {
  readonly backend: DemoBackend;
  readonly client: DemoClient;
  readonly redisUrl: string;
  readonly postgresUrl?: string;
  readonly prefix: string;
}

/** BullMQ's connection options for the queue: a PostgreSQL pool, or Redis through the chosen client. */
async function queueOptions(where: Where): Promise<QueueOptions> {
  if (where.backend === 'postgres') return { connection: { connectionString: where.postgresUrl, migrate: true, max: 4 } as never };
  // The demo stops its throwaway server under clients it still holds (BullMQ leaves a connection it was given open):
  // a closed socket is no news, on either client.
  if (where.client === 'ioredis') {
    const connection = new Redis(where.redisUrl, { maxRetriesPerRequest: null });
    connection.on('error', () => undefined);
    return { connection, prefix: where.prefix };
  }
  const raw = createClient({ url: where.redisUrl });
  raw.on('error', () => undefined);
  await raw.connect();
  const connection = createNodeRedisClient(raw);
  (connection as unknown as { on(event: 'error', listener: () => void): void }).on('error', () => undefined);
  return { connection, prefix: where.prefix };
}

const OnPostgres = withBackend(createPostgresBackend);

/** The demo's queue, wherever it lives. */
export async function demoQueue(name: string, where: Where): Promise<Queue> {
  const options = await queueOptions(where);
  return where.backend === 'postgres' ? (new OnPostgres.Queue(name, options as never) as unknown as Queue) : new Queue(name, options);
}

/** A worker of the demo's queue, wherever it lives. */
export async function demoWorker(name: string, processor: Processor, where: Where, timing: Partial<WorkerOptions>): Promise<Worker> {
  const options = { ...(await queueOptions(where)), ...timing } as WorkerOptions;
  return where.backend === 'postgres'
    ? (new OnPostgres.Worker(name, processor, options as never) as unknown as Worker)
    : new Worker(name, processor, options);
}
