/**
 * How a tool's error is put into words for the model and the logs.
 */
import type { Job } from 'bullmq';
import { retriesAutomatically, TIER_SUFFIX, type FailureTier } from '../../core/tiers.js';

/** The text of an error a tool threw. */
export const errorText = (error: unknown): string => (error instanceof Error ? error.message : String(error));

/** `text` ended as a sentence: trimmed, with a full stop added unless it already ends with one (or `!`, `?`). */
export function asSentence(text: string): string {
  const trimmed = text.trim();
  if (trimmed === '') return '';
  return /[.!?]["'\u2019\u201d)\]]*$/u.test(trimmed) ? trimmed : `${trimmed}.`;
}

/**
 * What the model is told about a failed call: the error, then its tier's
 * advice, as sentences (`Tool x failed: <error>. <advice>`).
 */
export function failureContent(toolName: string, message: string, tier: FailureTier): string {
  const error = asSentence(message);
  return error === '' ? `Tool ${toolName} failed. ${TIER_SUFFIX[tier]}` : `Tool ${toolName} failed: ${error} ${TIER_SUFFIX[tier]}`;
}

/**
 * Whether a failed call makes its job retry: the failure allows an automatic
 * rerun (`retriesAutomatically`) and the job has an attempt left. Otherwise
 * the model gets the error as the call's result.
 */
export function retriesJob(job: Job, tier: FailureTier, error: unknown): boolean {
  return retriesAutomatically(tier, error) && job.attemptsMade + 1 < (job.opts.attempts ?? 1);
}
