/**
 * Read-only calls, run without a receipt: validated and run as often as they
 * are delivered.
 */
import {
  DestructiveRanError,
  failureTier,
  NeverStartedError,
  OutcomeUnknownError,
  ToolRefusedError,
  type FailureTier,
} from '../../core/tiers.js';
import { ExecutionContext, NO_STEPS } from '../call/execution.js';
import { ToolCallFailedError } from '../errors.js';
import { errorText, failureContent, retriesJob } from './failure-text.js';
import { toolResultBlock, type ToolResultBlock } from '../../core/job-data.js';
import type { ReadyCall } from '../runtime.js';

/**
 * The tier of a read-only tool's failure. It changed nothing, so running it
 * again is as harmless as an idempotent tool's rerun. A tool that says
 * otherwise (it cannot tell what happened, or a destructive operation ran)
 * contradicts its own declaration: that is `neutral`, never retried, because
 * there is no receipt or breaker here to make the destructive tier's promise
 * (removal for the run) true.
 */
function readOnlyFailureTier(error: unknown): FailureTier {
  if (error instanceof DestructiveRanError || error instanceof OutcomeUnknownError) return 'neutral';
  return failureTier({ neverStarted: error instanceof NeverStartedError }, { idempotent: true });
}

/**
 * Run a read-only tool with no receipt: no Redis round trip, so it can never
 * be ambiguous or replayed, and its steps simply run. A failure retries the
 * job like an idempotent tool's (see {@link readOnlyFailureTier}), without
 * the run's circuit breaker, which only counts calls that hold receipts.
 */
export async function runReadOnlyCall(direct: ReadyCall): Promise<ToolResultBlock> {
  const { runtime, scope, call, tool } = direct;
  const ctx = new ExecutionContext({
    receipt: null,
    key: direct.key,
    attempt: scope.job.attemptsMade + 1,
    abort: scope.abort,
    tenantId: scope.data.tenantId,
    runId: scope.data.runId,
    sessionId: scope.data.sessionId,
    callId: call.id,
    job: scope.job,
    logger: direct.facts,
    recordedSteps: NO_STEPS,
    watch: null,
  });
  let value: unknown;
  try {
    value = await direct.facts.runTool(async () => tool.execute(direct.args, ctx));
  } catch (error) {
    const tier = readOnlyFailureTier(error);
    const message = errorText(error);
    direct.facts.answered('direct', error instanceof ToolRefusedError ? 'rejected' : 'failed', undefined, { error: message, tier });
    direct.facts.settled('failed', { tier, error });
    if (error instanceof ToolRefusedError) return toolResultBlock(call, 'rejected', { content: message, is_error: true });
    const content = failureContent(tool.name, message, tier);
    if (retriesJob(scope.job, tier, error)) throw new ToolCallFailedError(tool.name, call.id, tier, content, { cause: error });
    return toolResultBlock(call, 'failed', { content, is_error: true });
  }
  const result = await runtime.shape(value, call, tool, scope.data);
  direct.facts.answered('direct', 'executed');
  return toolResultBlock(call, 'executed', result);
}
