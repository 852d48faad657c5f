/**
 * The agent's side: submit a turn's tool calls to `withToolReceipts` workers
 * and wait for the results, with adapters for Anthropic Messages, OpenAI Chat
 * Completions, OpenAI Responses and the Vercel AI SDK.
 */
export {
  createToolCallClient,
  type ToolCallClient,
  type ToolCallClientOptions,
  type FoundTurn,
  type ToolCallInput,
  type TurnSubmission,
} from './client.js';
export { digestedTurnId } from './formats/ai-sdk-turn-id.js';
export { turnJobId, InvalidTurnIdError, type TurnIdentity } from './job-id.js';
export {
  TurnError,
  TurnTimeoutError,
  TurnAbortedError,
  AmbiguousTurnError,
  TurnInvalidDataError,
  TurnFailedError,
  TurnConflictError,
  InvalidWaitLimitError,
  MismatchedQueueEventsError,
  resumeHint,
  type QueueIdentity,
  type TurnJobRef,
  type UnfinishedJobState,
} from './errors.js';
export {
  submitTurnCalls,
  callsToSubmit,
  resultsInOrder,
  conflictResult,
  InvalidAssistantMessageError,
  ResultCountMismatchError,
  type TurnCalls,
  type TurnCallEntry,
} from './turn.js';
export { awaitingApproval, isTurnAnswered, type AwaitingApprovalResult, type TurnResult, type UnansweredResult } from './approval.js';
export { AWAITING_APPROVAL_PROGRESS, type AwaitingApprovalCall } from '../bullmq/outcomes/approval-progress.js';
export * from './formats/anthropic.js';
export * from './formats/openai-chat.js';
export * from './formats/openai-responses.js';
export * from './formats/ai-sdk.js';
export { aiSdkTurnId, type AiSdkToolCallContext } from './formats/ai-sdk-turn-id.js';
