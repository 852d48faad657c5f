/**
 * The job data a turn's job carries and the result it returns, as the wrapper
 * names them; the format itself is in src/core/job-data.ts (pure, shared with the client).
 */
export * from '../core/job-data.js';
