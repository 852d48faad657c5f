/**
 * One `tools/call` at the front: refused at once when it cannot run (unknown
 * tool, arguments too large or failing the upstream's schema, a `_meta` id
 * it cannot use: nothing is enqueued), else submitted as a one-call turn
 * under its identity (see scope.ts), waited for, approved at the client when
 * it may be, and answered.
 */
import type { Queue } from 'bullmq';
import { ErrorCode, type CallToolRequest, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { Logger } from 'pino';
import { CanonicalJsonError } from '../core/canonical-json.js';
import type { ToolResultBlock } from '../core/job-data.js';
import type { TurnResult } from '../client/approval.js';
import type { ToolCallClient, TurnSubmission } from '../client/client.js';
import {
  AmbiguousTurnError,
  TurnAbortedError,
  TurnError,
  TurnFailedError,
  TurnInvalidDataError,
  TurnTimeoutError,
} from '../client/errors.js';
import type { RedisConnection } from '../redis/connection/connection.js';
import type { Catalog, CatalogTool } from './catalog.js';
import type { GatewayConfig } from './config.js';
import { askApproval, type AskUser } from './elicit-approval.js';
import { ambiguousAnswer, awaitingApprovalAnswer, queueUnreachableAnswer, ranResult, sentence, stillRunningAnswer } from './results.js';
import { gatewayCallIdentity, InvalidCallMetaError, type CallScope } from './scope.js';

/** What the front's calls share. */
export interface GatewayCalls {
  readonly catalog: Catalog;
  readonly client: ToolCallClient;
  readonly queue: Queue;
  /** The receipts' connection (approval decisions). */
  readonly redis: RedisConnection;
  readonly config: GatewayConfig;
  readonly logger: Logger;
}

/** Who makes one call, and what the front may do for it at the client. */
export interface Caller {
  readonly tenant: string;
  readonly scope: CallScope;
  /** Fires when the client cancels the request (the call is not cancelled: only the wait). */
  readonly signal: AbortSignal;
  /** Tells the client the call is still going (progress), when it asked for progress. */
  readonly stillWorking?: () => Promise<void>;
  /** Asks the user at the client, when the client offers form elicitation and the config allows approving there. */
  readonly ask?: AskUser;
  /** The client's name from `initialize`, for the approval's record. */
  readonly clientName?: string;
}

/** How often a long wait tells a client that asked for progress that the call is still going. */
const STILL_WORKING_EVERY_MS = 15_000;

/** Answers one `tools/call`; throws an invalid-params error (-32602) for a request that cannot be a call. */
export async function answerCall(calls: GatewayCalls, params: CallToolRequest['params'], caller: Caller): Promise<CallToolResult> {
  const tool = calls.catalog.get(params.name);
  if (tool === undefined) {
    const shown = JSON.stringify(params.name.length > 100 ? `${params.name.slice(0, 100)}…` : params.name);
    throw invalidParams(`Unknown tool ${shown}: this gateway offers no tool of that name (see tools/list); nothing was run`);
  }
  const args = params.arguments ?? {};
  const bytes = Buffer.byteLength(JSON.stringify(args), 'utf8');
  if (bytes > calls.config.maxRequestBytes) {
    throw invalidParams(
      `The arguments of ${params.name} are ${bytes} bytes, more than this gateway takes (${calls.config.maxRequestBytes}); nothing was run`,
    );
  }
  const checked = await tool.definition.input.safeParseAsync(args);
  if (!checked.success) {
    const why = checked.error.issues.map((issue) => issue.message).join('; ');
    return sentence(`Invalid arguments for ${params.name}: ${why}. Nothing was run; correct the arguments and call again.`, 'not_run');
  }
  let identity;
  try {
    identity = gatewayCallIdentity(caller.tenant, caller.scope, params.name, args, params._meta);
  } catch (error) {
    if (error instanceof InvalidCallMetaError || error instanceof CanonicalJsonError) {
      throw invalidParams(`${error.message}; nothing was run`);
    }
    throw error;
  }
  const turn: TurnSubmission = { ...identity, calls: [{ id: identity.turnId, name: params.name, input: args }] };
  const timer = caller.stillWorking
    ? setInterval(() => void caller.stillWorking!().catch(() => undefined), STILL_WORKING_EVERY_MS)
    : undefined;
  try {
    return await runToAnswer(calls, tool, turn, args, caller);
  } finally {
    clearInterval(timer);
  }
}

async function runToAnswer(
  calls: GatewayCalls,
  tool: CatalogTool,
  turn: TurnSubmission,
  args: unknown,
  caller: Caller,
): Promise<CallToolResult> {
  const name = tool.listed.name;
  const { config } = calls;
  const first = await submitted(calls, tool, { ...turn, approvals: 'return', timeoutMs: config.callWaitMs, signal: caller.signal });
  if (!Array.isArray(first)) return first;
  const result = first[0]!;
  if (result.outcome !== 'awaiting_approval') return answerOf(result as ToolResultBlock, tool);
  const decision = caller.ask
    ? await askApproval(caller.ask, {
        redis: calls.redis,
        prefix: config.prefix,
        queue: calls.queue,
        receiptKey: result.approval.receiptKey,
        tool: name,
        args,
        reason: result.approval.reason,
        actor: `the user at MCP client ${caller.clientName ?? '(unnamed)'} of tenant ${caller.tenant}`,
        logger: calls.logger,
      })
    : 'undecided';
  // Decided here: wait for the call's end. Otherwise wait a while for a person to decide elsewhere.
  const waitMs = decision === 'undecided' ? config.approvals.waitMs : config.callWaitMs;
  const final = await submitted(calls, tool, { ...turn, approvals: 'wait', timeoutMs: waitMs, signal: caller.signal }, () =>
    awaitingApprovalAnswer(name, result.approval),
  );
  return Array.isArray(final) ? answerOf(final[0] as ToolResultBlock, tool) : final;
}

/**
 * Submits the turn and waits, turning every end that is not a result into
 * its answer. `stillParked` answers a wait that ran out while the job was
 * still parked for approval.
 */
async function submitted(
  calls: GatewayCalls,
  tool: CatalogTool,
  turn: TurnSubmission,
  stillParked?: () => CallToolResult,
): Promise<TurnResult[] | CallToolResult> {
  const name = tool.listed.name;
  try {
    return await calls.client.submit(turn);
  } catch (error) {
    if (error instanceof TurnAbortedError) throw error; // the client cancelled its request: nobody reads an answer
    if (error instanceof AmbiguousTurnError) return ambiguousAnswer(name, error.receiptKeys[0]);
    if (error instanceof TurnTimeoutError) {
      return stillParked !== undefined && error.jobState === 'delayed' ? stillParked() : stillRunningAnswer(name, error.timeoutMs);
    }
    if (error instanceof TurnFailedError || error instanceof TurnInvalidDataError) {
      return sentence(`The gateway could not complete this ${name} call: ${error.failedReason}`, 'failed');
    }
    if (error instanceof TurnError) return sentence(`The gateway could not run this ${name} call: ${error.message}`, 'not_run');
    calls.logger.warn({ err: error, tool: name }, 'submitting a call failed');
    return queueUnreachableAnswer(name, error instanceof Error ? error.message : String(error));
  }
}

/**
 * A request the gateway refuses as invalid params (JSON-RPC -32602): the SDK
 * sends an error's `code` and `message` as they are (an `McpError` would put
 * its own "MCP error" words before the sentence).
 */
function invalidParams(message: string): Error {
  return Object.assign(new Error(message), { code: ErrorCode.InvalidParams });
}

/** The answer for a call's result block. */
function answerOf(block: ToolResultBlock, tool: CatalogTool): CallToolResult {
  switch (block.outcome) {
    case 'executed':
    case 'replayed':
      return ranResult(block.content, block.is_error === true, block.outcome, tool.listed.outputSchema !== undefined);
    case 'ambiguous':
      return ambiguousAnswer(tool.listed.name, undefined);
    default:
      return sentence(block.content, block.outcome);
  }
}
