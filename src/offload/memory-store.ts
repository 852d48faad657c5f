/**
 * A bounded in-memory `ToolResultStore`, for tests and single-process hosts.
 */
import { checkOptions, wholeNumber, type OptionsSchema } from '../core/options.js';
import { assertToolResultProvenanceMatch, normalizeToolResultProvenance } from './provenance.js';
import { assertSafeToolResultRef, isSafeToolResultRef } from './ref.js';
import { resolveSliceWindow, toWellFormedText } from './text.js';
import type { ToolResultDeletionReport, ToolResultProvenance, ToolResultSlice, ToolResultSliceOptions, ToolResultStore } from './types.js';

/** Default bound of {@link InMemoryToolResultStore}: 50 million code units. */
export const DEFAULT_IN_MEMORY_MAX_TOTAL_CHARS = 50_000_000;

/** Options of {@link InMemoryToolResultStore}. */
export interface InMemoryToolResultStoreOptions {
  /**
   * Upper bound on the summed length of stored texts. Past it the oldest
   * entries are dropped first. The newest entry is always kept, even when it
   * alone exceeds the bound.
   */
  maxTotalChars?: number;
}

/** The rule of each {@link InMemoryToolResultStoreOptions} option. */
export const IN_MEMORY_TOOL_RESULT_STORE_SCHEMA: OptionsSchema<InMemoryToolResultStoreOptions> = {
  maxTotalChars: wholeNumber(1, 'characters'),
};

interface Entry {
  readonly content: string;
  readonly owner: ToolResultProvenance | undefined;
}

/**
 * A process-local {@link ToolResultStore} for tests and single-process use.
 * Nothing survives a restart, and an evicted ref reads as unknown.
 *
 * Content and owner are one map value, so the write that wins the ref decides
 * both in the same step.
 */
export class InMemoryToolResultStore implements ToolResultStore {
  /** Nothing is deleted on a schedule here. */
  readonly retention = 'none' as const;

  private readonly entries = new Map<string, Entry>();
  private readonly maxTotalChars: number;
  private totalChars = 0;

  /** Throws `options.invalid` for options it cannot use. */
  constructor(options: InMemoryToolResultStoreOptions = {}) {
    checkOptions('InMemoryToolResultStore', options, IN_MEMORY_TOOL_RESULT_STORE_SCHEMA);
    this.maxTotalChars = options.maxTotalChars ?? DEFAULT_IN_MEMORY_MAX_TOTAL_CHARS;
  }

  /** Store `content` under `ref` once; see {@link ToolResultStore.put}. */
  put(ref: string, content: string, provenance?: ToolResultProvenance): void {
    assertSafeToolResultRef(ref);
    const owner = provenance === undefined ? undefined : normalizeToolResultProvenance(provenance);
    const existing = this.entries.get(ref);
    if (existing !== undefined) {
      assertToolResultProvenanceMatch(ref, existing.owner, owner);
      return;
    }
    const text = toWellFormedText(String(content));
    this.entries.set(ref, { content: text, owner });
    this.totalChars += text.length;
    this.evict(ref);
  }

  /** Read a window of the text under `ref`; see {@link ToolResultStore.get}. */
  get(ref: string, options?: ToolResultSliceOptions): ToolResultSlice | undefined {
    if (!isSafeToolResultRef(ref)) return undefined;
    const entry = this.entries.get(ref);
    if (entry === undefined) return undefined;
    const { start, end } = resolveSliceWindow(options, entry.content.length);
    return { content: entry.content.slice(start, end), offset: start, totalChars: entry.content.length };
  }

  /** The recorded owner, or `undefined` for unknown and unowned refs. */
  ownerOf(ref: string): ToolResultProvenance | undefined {
    if (!isSafeToolResultRef(ref)) return undefined;
    const owner = this.entries.get(ref)?.owner;
    return owner === undefined ? undefined : { ...owner };
  }

  /** Remove the entries recorded for `sessionId`; see {@link ToolResultStore.deleteBySession}. */
  deleteBySession(sessionId: string): ToolResultDeletionReport {
    let deleted = 0;
    let unattributable = 0;
    for (const [ref, entry] of this.entries) {
      if (entry.owner === undefined) {
        unattributable += 1;
      } else if (entry.owner.sessionId === sessionId) {
        this.entries.delete(ref);
        this.totalChars -= entry.content.length;
        deleted += 1;
      }
    }
    return { deleted, unattributable };
  }

  /** Number of entries held now. */
  get size(): number {
    return this.entries.size;
  }

  private evict(keep: string): void {
    for (const [ref, entry] of this.entries) {
      if (this.totalChars <= this.maxTotalChars) return;
      if (ref === keep) continue;
      this.entries.delete(ref);
      this.totalChars -= entry.content.length;
    }
  }
}
