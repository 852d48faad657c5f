import type { Job } from 'bullmq';
import { retriesAutomatically, TIER_SUFFIX, type FailureTier } from '../core/tiers.js';

/** The text of an error a tool threw. */
export const errorText = (error: unknown): string => (error instanceof Error ? error.message : String(error));

/** What the model is told about a failed call: the error, then its tier's advice. */
export const failureContent = (toolName: string, message: string, tier: FailureTier): string =>
  `Tool ${toolName} failed: ${message} ${TIER_SUFFIX[tier]}`;

/**
 * Whether a failed call makes its job retry: the failure allows an automatic
 * rerun (`retriesAutomatically`) and the job has an attempt left. Otherwise
 * the model gets the error as the call's result.
 */
export function retriesJob(job: Job, tier: FailureTier, error: unknown): boolean {
  return retriesAutomatically(tier, error) && job.attemptsMade + 1 < (job.opts.attempts ?? 1);
}
