/**
 * The BullMQ queue of a job parked on an approval, opened on the receipts'
 * own connection from what the pending approval records (the job's queue
 * name and BullMQ prefix), so a decision can promote the job and an
 * approver can read its arguments without being handed a queue.
 */
import { Queue } from 'bullmq';
import { receiptsConnection, type RedisConnection } from '../redis/connection/connection.js';

/**
 * How long a parked delivery is given to unwind before its job may run
 * again: the shortest park, and how long after a person's decision, or a
 * call of its own turn, a parked job is promoted. BullMQ's
 * worker still holds the parked delivery for a round trip after the
 * processor threw (it fetches its next job, then stops tracking the job by
 * its id), so a job run again at once that another slot of the same worker
 * fetched meanwhile would lose its lock tracking to that unwinding, its lock
 * never renewed, and stall. A quarter second is far more than that round
 * trip.
 */
export const PARKED_DELIVERY_UNWIND_MS = 250;

/** Where a parked job lives, as an approval records it. */
export interface ParkedJob {
  readonly queue: string;
  readonly prefix: string;
  readonly id: string;
}

/** A queue opened for a parked job; `close` releases what opening it took, never the receipts' connection. */
export interface OpenedJobQueue {
  readonly queue: Queue;
  close(): Promise<void>;
}

/** What a node-redis client offers for a connection of its own. */
interface DuplicableClient {
  duplicate(): { connect(): Promise<{ close?(): Promise<unknown>; quit?(): Promise<unknown> }> };
}

/**
 * The queue of `job` on `redis`, which must also be the queue's Redis (a
 * queue elsewhere simply finds no such job). An ioredis client is shared
 * with the queue (BullMQ leaves a client it was handed open); a node-redis
 * client is duplicated, since BullMQ would close it. `undefined` when the
 * client can do neither (a node-redis cluster or sentinel).
 */
export async function openJobQueue(redis: RedisConnection, job: ParkedJob): Promise<OpenedJobQueue | undefined> {
  if (receiptsConnection(redis).client === 'ioredis') {
    const queue = new Queue(job.queue, { connection: redis as never, prefix: job.prefix });
    return { queue, close: () => queue.close().catch(() => undefined) };
  }
  const duplicate = (redis as Partial<DuplicableClient>).duplicate;
  if (typeof duplicate !== 'function') return undefined;
  const client = await duplicate.call(redis).connect();
  const queue = new Queue(job.queue, { connection: client as never, prefix: job.prefix });
  return {
    queue,
    async close() {
      await queue.close().catch(() => undefined);
      await (client.close ?? client.quit)?.call(client).catch(() => undefined);
    },
  };
}
