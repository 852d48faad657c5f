/**
 * The option schema of `createToolCallClient`: every option checked when the
 * client is made, so a wrong one is refused before any turn is submitted.
 */
import { nonBlankString, objectOption, required, shaped, wholeNumber } from '../core/options.js';
import { MAX_WAIT_MS } from './errors.js';

/**
 * The rule of each `createToolCallClient` option. The client checks with it
 * as `OptionsSchema<ToolCallClientOptions>`, so an option the interface has
 * and this lacks does not compile; a test holds the key sets equal.
 */
export const TOOL_CALL_CLIENT_SCHEMA = {
  queue: required(shaped('a BullMQ Queue (new Queue(name, { connection }))', ['add', 'getJobState', 'getJobLogs'])),
  queueEvents: required(shaped('a BullMQ QueueEvents of the same queue (new QueueEvents(name, { connection }))', ['on', 'waitUntilReady'])),
  jobName: nonBlankString,
  jobOptions: objectOption,
  timeoutMs: wholeNumber(0, 'ms', MAX_WAIT_MS),
} as const;
