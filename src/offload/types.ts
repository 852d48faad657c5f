/** A value, or a promise of it: stores may answer synchronously or not. */
export type Awaitable<T> = T | Promise<T>;

/**
 * Who a stored tool result belongs to. Recorded once, at the write that won
 * the write-once election, and compared field by field afterwards.
 *
 * `taskId` narrows the session; it never replaces it. The tool call id is not
 * part of the owner: two calls of one session have the same owner.
 */
export interface ToolResultProvenance {
  readonly sessionId: string;
  readonly taskId?: string;
}

/** One window of a stored result, counted in UTF-16 code units. */
export interface ToolResultSlice {
  /** The text of the window (may be shorter than asked near the end). */
  content: string;
  /** Where the window starts, after clamping to `[0, totalChars]`. */
  offset: number;
  /** Length of the whole stored text, as JavaScript's `string.length` counts it. */
  totalChars: number;
}

/** Which window `get` returns. Both numbers are UTF-16 code units. */
export interface ToolResultSliceOptions {
  /** First code unit of the window. Default 0; clamped to the text. */
  offset?: number;
  /** Most code units to return. Default: the rest of the text. */
  limit?: number;
}

/** What one `deleteBySession` call did. */
export interface ToolResultDeletionReport {
  /** Entries this call removed. A repeat of a finished sweep reports 0. */
  readonly deleted: number;
  /**
   * Entries the sweep saw with no readable owner and therefore kept. Counted
   * over the whole store, not only the session: such an entry might have been
   * anyone's, which is exactly why it is not deleted.
   */
  readonly unattributable: number;
}

/**
 * Whether a store promises scheduled, audited deletion (`'managed'`) or not
 * (`'none'`). An absent declaration is read as `'none'`. Expiry by TTL is not
 * managed retention.
 */
export type RetentionDeclaration = 'none' | 'managed';

/**
 * Storage for tool results too large to keep in a job or in model context.
 *
 * Rules every backend follows (the contract suite checks them):
 * - `put` is write-once per ref. A repeat with the same owner, or with no
 *   owner, is a no-op that keeps the stored text and owner. A repeat stating
 *   a different owner throws `ToolResultRefConflictError`. An entry stored
 *   without an owner never gains one later.
 * - The write that stores the text is the write that records the owner; no
 *   reader can observe one without the other.
 * - `put` rejects refs that `assertSafeToolResultRef` rejects; `get` and
 *   `ownerOf` answer such refs as unknown.
 * - Stored text is well-formed UTF-16: an unpaired surrogate is kept as U+FFFD.
 */
export interface ToolResultStore {
  /** Retention promise of this backend; see {@link RetentionDeclaration}. */
  readonly retention?: RetentionDeclaration;

  /** Store `content` under `ref` unless the ref is taken (see the rules above). */
  put(ref: string, content: string, provenance?: ToolResultProvenance): Awaitable<void>;

  /** Read a window of the text under `ref`; `undefined` when the ref is unknown. */
  get(ref: string, options?: ToolResultSliceOptions): Awaitable<ToolResultSlice | undefined>;

  /**
   * The owner recorded at the winning write. `undefined` both for an unknown
   * ref and for an entry stored without an owner; callers authorizing a read
   * must treat the two alike and refuse.
   */
  ownerOf(ref: string): Awaitable<ToolResultProvenance | undefined>;

  /**
   * Remove every entry whose recorded owner has this `sessionId` (any
   * `taskId`). Selection is by the recorded owner only, never by reading the
   * ref. Entries without a readable owner are kept and counted. Repeating the
   * call is harmless, and an entry that vanishes mid-sweep is simply skipped.
   *
   * Optional: a backend that cannot enumerate by owner is still a usable
   * store, but then the deployment has to erase sessions some other way.
   */
  deleteBySession?(sessionId: string): Awaitable<ToolResultDeletionReport>;
}
