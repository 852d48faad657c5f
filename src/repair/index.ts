/**
 * Validation and repair of model-written tool calls, run before a call is
 * claimed: schema-driven corrections that only re-read what the model wrote,
 * a guarded reshaping step for what they cannot fix, and a refusal to let
 * anyone but the model write the arguments of a destructive tool. Pure
 * functions; no Redis, no queue.
 */
export {
  type AssistantMessage,
  type ContentBlock,
  type TextBlock,
  type ToolUseBlock,
  type ToolSchemas,
  type InputPath,
  type ValidationIssue,
  type ValidationIssueCode,
  isToolUseBlock,
  toolUses,
} from './types.js';
export { DuplicateToolNameError, ArgumentConflictError, InvalidAliasError } from './errors.js';
export { destructiveMatcher } from './destructive.js';
export { decodeToolInput, decodeDoubleEncodedInputs, DECODE_MAX_DEPTH, type DecodedInput } from './decode.js';
export { guardReshaped, type GuardVerdict } from './guard.js';
export {
  type ToolUseValidator,
  type ToolInputParseOutcome,
  zodToolUseValidator,
  parseToolInput,
  parseToolInputAsync,
  validateMessage,
  validateMessageAsync,
} from './validator.js';
export { type Reshaper, type ReshapeRequest } from './reshaper.js';
export { dropNullDefaultedArgs } from './null-args.js';
export {
  toolArgumentsFor,
  assertValidAliases,
  type ParamAliases,
  type AliasCorrection,
  type AliasConflict,
  type ToolArguments,
} from './aliases.js';
export { assertUniqueToolNames } from './tool-names.js';
export { normalizeToolInput, normalizeMessageInputs, type InputCorrection, type NormalizedInput } from './normalize.js';
export {
  prepareToolInput,
  prepareToolInputAsync,
  type PreparableTool,
  type PrepareFailureReason,
  type PreparedToolInput,
} from './prepare.js';
export { repair, type RepairDeps, type RepairDecision, type RepairOutcome, type RepairAttemptFailure } from './repair.js';
