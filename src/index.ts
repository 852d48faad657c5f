/**
 * bullmq-tool-receipts: at-most-once side effects for AI-agent tool calls run
 * as BullMQ jobs. This entry re-exports each layer's public surface.
 */
export * from './core/index.js';
