/**
 * A stand-in for the BullMQ `Job` a processor receives, so a processor made
 * with `withToolReceipts` can be unit-tested without a Queue or a Worker.
 * Only the job is stood in for: receipts still go to the real Redis the
 * processor was given, so what a test sees is what a worker would do.
 */
import type { Job } from 'bullmq';

/** Settings of a {@link testJob}; each defaults to a first delivery of a fresh job. */
export interface TestJobOptions {
  /** Default `test-job-<n>`. */
  readonly id?: string;
  /** Default `tool-calls`. */
  readonly name?: string;
  /** Attempts BullMQ would allow (the job option `attempts`). Default 1. */
  readonly attempts?: number;
  /** Attempts already made before this one. Default 0. */
  readonly attemptsMade?: number;
  /** The queue the job belongs to. Default `tool-calls`. */
  readonly queueName?: string;
  /** BullMQ's key prefix of that queue. Default `bull`. */
  readonly prefix?: string;
  /**
   * The job's progress when this delivery starts (`job.progress`), as an
   * earlier delivery left it: the calls a parked turn listed as awaiting
   * approval, say. Default 0, BullMQ's own.
   */
  readonly progress?: unknown;
}

/** What the processor did to the job, besides returning or throwing. */
export interface TestJobRecord {
  /** Each `moveToDelayed` timestamp (ms since the epoch): the job was sent to wait for a live attempt. */
  readonly delayedUntil: number[];
  /** Each line written with `job.log`. */
  readonly logs: string[];
  /** Each `job.updateProgress` value, in order (the job's `progress` is the last). */
  readonly progress: unknown[];
}

/** A {@link Job} stand-in plus what was done to it; pass `job` to the processor. */
export interface TestJob {
  readonly job: Job;
  readonly record: TestJobRecord;
}

let made = 0;

/**
 * A job carrying `data` (a tool-call job: `{ tenantId, runId, calls }`) for
 * `processor(job, token)`. It answers the fields and methods the wrapper and
 * tools use (`id`, `name`, `data`, `opts.attempts`, `attemptsMade`,
 * `queueName`, `queueQualifiedName`, `progress`, `moveToDelayed`, `log`,
 * `updateProgress`, which sets `progress` as BullMQ's does) and records the calls; anything
 * else of BullMQ's Job is absent, so a tool that needs it should be tested
 * with a real Worker.
 */
export function testJob(data: unknown, options: TestJobOptions = {}): TestJob {
  made += 1;
  const record: TestJobRecord = { delayedUntil: [], logs: [], progress: [] };
  const standIn = {
    id: options.id ?? `test-job-${made}`,
    name: options.name ?? 'tool-calls',
    data,
    opts: { attempts: options.attempts ?? 1 },
    attemptsMade: options.attemptsMade ?? 0,
    queueName: options.queueName ?? 'tool-calls',
    queueQualifiedName: `${options.prefix ?? 'bull'}:${options.queueName ?? 'tool-calls'}`,
    timestamp: Date.now(),
    progress: options.progress ?? (0 as unknown),
    async moveToDelayed(timestamp: number): Promise<void> {
      record.delayedUntil.push(timestamp);
    },
    async log(row: string): Promise<number> {
      record.logs.push(row);
      return record.logs.length;
    },
    async updateProgress(progress: unknown): Promise<void> {
      record.progress.push(progress);
      standIn.progress = progress;
    },
  };
  return { job: standIn as unknown as Job, record };
}
