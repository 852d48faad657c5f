/**
 * bullmq-tool-receipts: at-most-once side effects for AI-agent tool calls run
 * as BullMQ jobs. This entry re-exports each layer's public surface:
 * the pure core, the Redis stores, argument repair, and the BullMQ wrapper.
 */
export * from './core/index.js';
export * from './redis/index.js';
export * from './repair/index.js';
export * from './offload/index.js';
export * from './bullmq/index.js';
