/**
 * `bullmq-tool-receipts/console`: the operator console in the browser, as a
 * plain Node `http` request handler to mount anywhere, or served on its own.
 */
export { createConsoleHandler, type ConsoleHandler, type ConsoleOptions } from './handler.js';
export { startConsoleServer, DEFAULT_CONSOLE_PORT, type ConsoleServer, type ConsoleServerOptions } from './server.js';
export { isLoopbackHost } from '../http/hosts.js';
export { ConsoleTokenRequiredError, ConsoleOptionsError } from './errors.js';
export { escapeHtml } from './html.js';
export { MIN_TOKEN_LENGTH, CONTENT_SECURITY_POLICY, type ConsoleRole, type ConsoleTokens } from './security.js';
export { MAX_BULK_RECEIPTS } from './bulk.js';
export type { ConsoleQueue } from './queries.js';
export {
  AuditLog,
  auditLogRedisKey,
  DEFAULT_AUDIT_MAX_ENTRIES,
  type AuditAction,
  type AuditEntry,
  type AuditEntryInput,
} from '../redis/operators/audit-log.js';
