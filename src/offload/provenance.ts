/**
 * The owner (session, task) recorded with an offloaded result, checked and
 * stored in one form.
 */
import { InvalidToolResultProvenanceError, ToolResultRefConflictError } from './errors.js';
import type { ToolResultProvenance } from './types.js';

/**
 * Check an owner passed to `put` and return it in stored form: exactly
 * `sessionId` and, only when it is a string, `taskId`. An explicit
 * `taskId: undefined` and an absent one are the same owner.
 */
export function normalizeToolResultProvenance(provenance: ToolResultProvenance): ToolResultProvenance {
  if (typeof provenance !== 'object' || provenance === null || typeof provenance.sessionId !== 'string') {
    throw new InvalidToolResultProvenanceError('tool result owner needs a string sessionId');
  }
  const { sessionId, taskId } = provenance;
  if (taskId === undefined) return { sessionId };
  if (typeof taskId !== 'string') {
    throw new InvalidToolResultProvenanceError('tool result owner taskId must be a string when present');
  }
  return { sessionId, taskId };
}

/** Whether two normalized owners are the same owner: every field equal. */
export function sameToolResultOwner(a: ToolResultProvenance, b: ToolResultProvenance): boolean {
  return a.sessionId === b.sessionId && a.taskId === b.taskId;
}

/**
 * The write-once verdict on a repeated `put`. No incoming owner, or no stored
 * owner, means no verdict (the put is a no-op and nothing is adopted). Two
 * owners that differ in any field, a missing `taskId` against a present one
 * included, throw {@link ToolResultRefConflictError}. `storedUnreadable` marks
 * an owner record that exists but could not be read: it conflicts with every
 * incoming owner.
 */
export function assertToolResultProvenanceMatch(
  ref: string,
  stored: ToolResultProvenance | undefined,
  incoming: ToolResultProvenance | undefined,
  storedUnreadable = false,
): void {
  if (incoming === undefined) return;
  if (storedUnreadable) throw new ToolResultRefConflictError(ref, undefined, incoming);
  if (stored === undefined) return;
  if (!sameToolResultOwner(stored, incoming)) throw new ToolResultRefConflictError(ref, stored, incoming);
}

/** The owner for a write site that knows its session and maybe its task. */
export function toolResultProvenanceOf(sessionId: string, taskId?: string): ToolResultProvenance {
  return taskId === undefined ? { sessionId } : { sessionId, taskId };
}

/**
 * Serialize a normalized owner in the one canonical form stores persist:
 * `{"sessionId":…}` or `{"sessionId":…,"taskId":…}`, keys in that order. Equal
 * owners give equal strings.
 */
export function encodeOwnerRecord(owner: ToolResultProvenance): string {
  const s = JSON.stringify(owner.sessionId);
  return owner.taskId === undefined ? `{"sessionId":${s}}` : `{"sessionId":${s},"taskId":${JSON.stringify(owner.taskId)}}`;
}

/** Read an owner record back; `undefined` when it is not a readable owner. */
export function decodeOwnerRecord(record: string): ToolResultProvenance | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(record);
  } catch {
    return undefined;
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return undefined;
  const { sessionId, taskId } = parsed as Record<string, unknown>;
  if (typeof sessionId !== 'string') return undefined;
  if (taskId === undefined) return { sessionId };
  return typeof taskId === 'string' ? { sessionId, taskId } : undefined;
}
