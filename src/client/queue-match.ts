/**
 * Checks that a client's queue and its queue events name the same BullMQ
 * queue.
 */
import type { KeyPrefixOptions, Queue, QueueEvents } from 'bullmq';
import { MismatchedQueueEventsError, type QueueIdentity } from './errors.js';

/** BullMQ's key prefix when none is given. */
const BULLMQ_DEFAULT_PREFIX = 'bull';

/** What BullMQ names a queue's data by: its name, key prefix and the two joined as the backend joins them. */
const identityOf = (q: Queue | QueueEvents): QueueIdentity => ({
  name: q.name,
  prefix: (q.opts as KeyPrefixOptions).prefix ?? BULLMQ_DEFAULT_PREFIX,
  qualifiedName: q.qualifiedName,
});

/**
 * Refuse a `QueueEvents` that listens to another queue than the client's
 * `Queue` (another name or key prefix): it never hears the client's jobs end.
 * Another Redis server behind the same names is not seen here.
 */
export function assertSameQueue(queue: Queue, queueEvents: QueueEvents): void {
  const ours = identityOf(queue);
  const theirs = identityOf(queueEvents);
  const same = ours.name === theirs.name && ours.prefix === theirs.prefix && ours.qualifiedName === theirs.qualifiedName;
  if (!same) throw new MismatchedQueueEventsError(ours, theirs);
}
