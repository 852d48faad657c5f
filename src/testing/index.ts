/**
 * Helpers for testing code built on this package: the behaviour contract any
 * `ToolResultStore` backend must show, and a stand-in BullMQ job for running a
 * wrapped processor without a Worker.
 */
export { toolResultStoreContract, type ToolResultStoreContractCase, type ToolResultStoreFactory } from '../offload/contract/index.js';
export { testJob, type TestJob, type TestJobOptions, type TestJobRecord } from './test-job.js';
