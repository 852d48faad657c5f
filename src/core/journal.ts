/**
 * The tool-call journal of one agent turn: which calls finished and which
 * started but never reported back.
 * Over 300 lines: close to half of it is the TSDoc of the journal's public API.
 *
 * A resumed agent (after a crash, a dropped connection, a stalled job) has no
 * memory of the side effects its earlier attempt already caused. The journal
 * is computed from records that exist anyway (a host's own event ledger, or
 * the receipts this package stores), never recorded separately, and is used in
 * two ways:
 *
 * 1. {@link buildResumeJournalNote} renders it as text for the model, so it
 *    neither repeats finished work nor silently repeats work whose outcome is
 *    unknown.
 * 2. {@link findCompletedJournalEntry} lets the tool layer answer a repeated
 *    call from the journal instead of running its side effect again.
 *
 * Everything in this module is pure: no clock, no I/O, and inputs are never
 * mutated. Entries share `input` values with the events they came from by
 * reference; they are not copied.
 *
 * ## Inputs that have no canonical form
 *
 * Inputs are compared by {@link canonicalJson}. When an input cannot be
 * serialized (it throws `CanonicalJsonError`, or a `toJSON`/getter inside it
 * throws), the journal does not throw: that input simply equals nothing.
 * A `tool_done` carrying it completes no call, a `tool_start` carrying it can
 * only be completed by a `tool_done` without input, and a lookup with it finds
 * nothing. Failing closed this way can cost one extra execution, which the
 * receipts guard against; it can never hand one call's result to another, and
 * it never makes a resume crash on a malformed ledger.
 *
 * @packageDocumentation
 */

import { createHash } from 'node:crypto';
import { canonicalJson } from './canonical-json.js';

/** A host ledger event announcing that a tool call is about to run. */
export interface JournalToolStartEvent {
  type: 'tool_start';
  /** The tool's name. */
  tool: string;
  /** The arguments as the model sent them; omit if the ledger does not keep them. */
  input?: unknown;
}

/** A host ledger event reporting that a tool call returned. */
export interface JournalToolDoneEvent {
  type: 'tool_done';
  /** The tool's name. */
  tool: string;
  /**
   * The arguments of the call that finished. When present, the event is paired
   * with the open start whose input is canonically equal; when absent (older
   * ledgers), it is paired with the oldest open start of the same tool.
   */
  input?: unknown;
  /** The result text the model saw. */
  result: string;
}

/** A host ledger event saying everything recorded so far in this turn was discarded. */
export interface JournalClearEvent {
  type: 'clear';
}

/**
 * One event of a host's own run ledger. Only `tool_start`, `tool_done` and
 * `clear` mean anything to the journal; events of any other type are skipped,
 * as are tool events whose `tool` is not a string.
 */
export type JournalEvent = JournalToolStartEvent | JournalToolDoneEvent | JournalClearEvent | { type: string; [field: string]: unknown };

/** One tool call of a turn, with what is known about its outcome. */
export interface ToolCallJournalEntry {
  /**
   * Identifies the call inside its journal: `tool(signature)@order`, where
   * `signature` is the first 8 hex digits of the SHA-256 of the canonical
   * input, `-` when no input was recorded, or `?` when the input has no
   * canonical form. Because `order` is unique within a journal, so is the key;
   * the same ledger always yields the same keys.
   */
  key: string;
  /** The tool's name. */
  tool: string;
  /** The call's input as recorded at its start; absent when none was recorded. */
  input?: unknown;
  /**
   * 0-based position of the call among all calls of the turn, counted from
   * the last `clear` (or, for receipts, among all receipts by creation time).
   */
  order: number;
  /** The result text, for a completed call that recorded one. */
  result?: string;
}

/** The calls of one turn, split by outcome. Both lists are sorted by `order`. */
export interface ToolCallJournal {
  /** Calls that finished: their side effects happened and must not be repeated. */
  completed: ToolCallJournalEntry[];
  /** Calls that started but never reported back: their side effects may or may not have happened. */
  interrupted: ToolCallJournalEntry[];
}

/**
 * Longest result text, in UTF-16 code units, that {@link buildResumeJournalNote}
 * quotes before cutting it short.
 */
export const JOURNAL_NOTE_MAX_RESULT_CHARS = 300;

/**
 * Longest canonical input text, in UTF-16 code units, that
 * {@link buildResumeJournalNote} quotes before cutting it short.
 */
export const JOURNAL_NOTE_MAX_INPUT_CHARS = 200;

/**
 * Canonical text of an input: `undefined` when no input was recorded, `null`
 * when the input cannot be serialized. Only two strings can ever be equal.
 */
function canonicalInput(input: unknown): string | null | undefined {
  if (input === undefined) return undefined;
  try {
    return canonicalJson(input);
  } catch {
    return null;
  }
}

function signatureOf(canonical: string | null | undefined): string {
  if (canonical === undefined) return '-';
  if (canonical === null) return '?';
  return createHash('sha256').update(canonical, 'utf8').digest('hex').slice(0, 8);
}

function entryKey(tool: string, canonical: string | null | undefined, order: number): string {
  return `${tool}(${signatureOf(canonical)})@${order}`;
}

/** Result text as the journal stores it: strings unchanged, anything else as JSON. */
function resultText(value: unknown): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value === 'string') return value;
  try {
    const json = JSON.stringify(value);
    if (typeof json === 'string') return json;
  } catch {
    // A cycle, a BigInt or a throwing toJSON: fall through to a placeholder.
  }
  return '[result has no JSON form]';
}

/**
 * The text a model saw for a stored result: the `content` of a tool_result
 * the BullMQ wrapper recorded (`{ content: string, … }`), else `undefined`.
 * Shown instead of the recorded block as JSON, which would encode the
 * content twice.
 */
export function recordedToolResultContent(value: unknown): string | undefined {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
  const content = (value as { content?: unknown }).content;
  return typeof content === 'string' ? content : undefined;
}

function byOrder(a: ToolCallJournalEntry, b: ToolCallJournalEntry): number {
  return a.order - b.order;
}

function makeEntry(tool: string, input: unknown, canonical: string | null | undefined, order: number): ToolCallJournalEntry {
  const entry: ToolCallJournalEntry = { key: entryKey(tool, canonical, order), tool, order };
  if (input !== undefined) entry.input = input;
  return entry;
}

interface OpenCall {
  entry: ToolCallJournalEntry;
  canonical: string | null | undefined;
}

/**
 * Split one turn's ledger events into completed and interrupted tool calls.
 *
 * Pairing rules, applied in ledger order:
 *
 * - `tool_start` opens a call.
 * - `tool_done` with an `input` closes the oldest open call of the same tool
 *   whose input is canonically equal (key order inside objects is
 *   irrelevant). If there is none, the event is ignored: pairing it with a
 *   call of different input would credit that call with a result it never
 *   produced.
 * - `tool_done` without an `input` closes the oldest open call of the same
 *   tool, whatever its input (first in, first out per tool), which is all an
 *   older ledger allows.
 * - A `tool_done` that closes nothing is ignored.
 * - `clear` forgets every call seen so far, open or closed, and restarts the
 *   `order` count, so output discarded before a resume leaves no phantom calls.
 *
 * Calls still open at the end are interrupted. Every `tool_start` after the
 * last `clear` therefore lands in exactly one of the two lists. The function
 * is pure and total: the same events always give an equal journal, and no
 * ledger content makes it throw.
 */
export function classifyToolCallJournal(events: readonly JournalEvent[]): ToolCallJournal {
  let completed: ToolCallJournalEntry[] = [];
  let open = new Map<string, OpenCall[]>();
  let order = 0;

  for (const event of events) {
    if (typeof event !== 'object' || event === null) continue;
    if (event.type === 'clear') {
      completed = [];
      open = new Map();
      order = 0;
      continue;
    }
    if (event.type !== 'tool_start' && event.type !== 'tool_done') continue;
    // Host ledgers are data, not typed values: read every field as unknown.
    const fields = event as Readonly<Record<string, unknown>>;
    const tool = fields['tool'];
    if (typeof tool !== 'string') continue;
    const input = fields['input'];

    if (event.type === 'tool_start') {
      const canonical = canonicalInput(input);
      const calls = open.get(tool) ?? [];
      calls.push({ entry: makeEntry(tool, input, canonical, order), canonical });
      open.set(tool, calls);
      order += 1;
      continue;
    }

    const calls = open.get(tool);
    if (calls === undefined || calls.length === 0) continue;
    let index = 0;
    if (input !== undefined) {
      const wanted = canonicalInput(input);
      index = typeof wanted === 'string' ? calls.findIndex((c) => c.canonical === wanted) : -1;
      if (index < 0) continue;
    }
    const [closed] = calls.splice(index, 1);
    if (closed === undefined) continue;
    const result = resultText(fields['result']);
    completed.push(result === undefined ? closed.entry : { ...closed.entry, result });
  }

  const interrupted: ToolCallJournalEntry[] = [];
  for (const calls of open.values()) for (const c of calls) interrupted.push(c.entry);
  return { completed: completed.sort(byOrder), interrupted: interrupted.sort(byOrder) };
}

/** True when the journal lists no calls at all, so a resume has nothing to warn about. */
export function isJournalEmpty(journal: ToolCallJournal): boolean {
  return journal.completed.length === 0 && journal.interrupted.length === 0;
}

/**
 * Look up a completed call that a call about to run would repeat: same tool
 * name and canonically equal input, wherever it sat in the turn (a resumed
 * model may issue its calls in a different order).
 *
 * Returns the first completed entry, by `order`, whose key is not in
 * `consumedKeys`, or `undefined`. The caller should add the returned key to
 * `consumedKeys` before the next lookup, so that two identical calls in one
 * turn are not both answered by a single recorded completion. This function
 * only reads the set.
 *
 * Entries without a recorded input (older ledgers, receipts) are never
 * returned, and neither is anything for an `input` that is `undefined` or has
 * no canonical form: without comparable arguments there is no telling which
 * call an entry was, and replaying the wrong call's result is worse than
 * running a call once more.
 */
export function findCompletedJournalEntry(
  journal: ToolCallJournal,
  toolName: string,
  input: unknown,
  consumedKeys?: ReadonlySet<string>,
): ToolCallJournalEntry | undefined {
  const wanted = canonicalInput(input);
  if (typeof wanted !== 'string') return undefined;
  for (const entry of journal.completed) {
    if (entry.tool !== toolName || consumedKeys?.has(entry.key)) continue;
    if (canonicalInput(entry.input) === wanted) return entry;
  }
  return undefined;
}

/** Cut text to `max` code units without splitting a surrogate pair, saying how much was dropped. */
function clip(text: string, max: number): string {
  if (text.length <= max) return text;
  let end = max;
  const last = text.charCodeAt(end - 1);
  if (last >= 0xd800 && last <= 0xdbff) end -= 1;
  return `${text.slice(0, end)}… [${text.length - end} more chars]`;
}

/** Tool names are shown bare when harmless, otherwise quoted so they cannot break the layout. */
function showTool(tool: string): string {
  return /^[A-Za-z0-9_.:/-]+$/.test(tool) ? tool : JSON.stringify(tool);
}

function showInput(entry: ToolCallJournalEntry): string {
  if (entry.input === undefined) return '';
  const canonical = canonicalInput(entry.input);
  const text = typeof canonical === 'string' ? clip(canonical, JOURNAL_NOTE_MAX_INPUT_CHARS) : '(not serializable)';
  return ` with input ${JSON.stringify(text)}`;
}

/**
 * Render the journal as a note for a resumed model, or `null` when the journal
 * is empty, so a resume without tool activity can keep its usual wording.
 *
 * The note is plain text, one call per line, in two sections: calls that
 * already finished, with their results, which the model must not issue again;
 * and calls that started but never reported back, which the model must check
 * before repeating, since their side effects may already have happened. A
 * section with no calls is left out.
 *
 * Results longer than {@link JOURNAL_NOTE_MAX_RESULT_CHARS} and canonical
 * inputs longer than {@link JOURNAL_NOTE_MAX_INPUT_CHARS} are cut short with a
 * marker. Both are written as JSON string literals, so newlines or quotes in a
 * result can never pose as further lines of the note.
 */
export function buildResumeJournalNote(journal: ToolCallJournal): string | null {
  if (isJournalEmpty(journal)) return null;
  const lines: string[] = ['Tool calls made earlier in this turn, before it was interrupted:'];
  if (journal.completed.length > 0) {
    lines.push('', 'Finished. These already took effect; do NOT call them again, use the result shown:');
    for (const e of journal.completed) {
      const result =
        e.result === undefined ? 'no result recorded' : `result ${JSON.stringify(clip(e.result, JOURNAL_NOTE_MAX_RESULT_CHARS))}`;
      lines.push(`- ${showTool(e.tool)}${showInput(e)}: ${result}`);
    }
  }
  if (journal.interrupted.length > 0) {
    lines.push(
      '',
      'Outcome unknown. These started but never reported back, so their effect may or may not have happened; verify before calling any of them again:',
    );
    for (const e of journal.interrupted) lines.push(`- ${showTool(e.tool)}${showInput(e)}`);
  }
  return lines.join('\n');
}

/**
 * The fields of a stored receipt that the journal reads. Structural, so any
 * receipt record with at least these fields can be passed in.
 */
export type JournalReceiptRecord = JournalReceiptFields &
  (
    | { /** The tool's name. */ tool: string }
    | { /** The receipt's key, as `ReceiptStore.listRun` returns it; its `toolName` names the tool. */ key: { toolName: string } }
  );

/** The fields of {@link JournalReceiptRecord} besides the tool's name. */
export interface JournalReceiptFields {
  /** The receipt's state; an approval state (the call has not run) is left out of the journal. */
  status: 'running' | 'completed' | 'failed' | 'awaiting_approval' | 'approved' | 'denied';
  /** When the receipt was first created, in milliseconds; orders the calls. */
  createdMs: number;
  /**
   * The stored result of a completed call. A tool_result as the wrapper
   * records it (`{ content: string, … }`) is shown as its `content`.
   */
  result?: unknown;
  /** When the store judged the outcome unknown, if it has; `null` or absent otherwise. */
  ambiguousMs?: number | null;
  /** For a running receipt: whether its lease has lapsed, judged on the store's clock. */
  leaseExpired?: boolean;
}

/**
 * Build a journal from the receipts of one run, ordered by creation time
 * (ties keep the order given). `order` counts every receipt, reported or not.
 *
 * - `completed` receipts are completed entries. The result is kept as is when
 *   it is a string and as JSON otherwise.
 * - `running` receipts whose lease has expired or that the store marked
 *   ambiguous (`ambiguousMs` set) are interrupted: the worker may have died
 *   after the effect landed or before.
 * - `failed` receipts are left out, including ambiguous ones an operator
 *   resolved as failed: the effect did not happen and retrying is allowed.
 * - receipts awaiting approval, approved but not started, or denied are left
 *   out: the call has not run (a denied one never will).
 * - `running` receipts with a live lease are left out: a worker is still on
 *   the call, its outcome is not lost, and if the model repeats the call the
 *   receipt makes it wait for that worker instead of running twice.
 *
 * Receipts keep an argument digest, not the arguments, so these entries carry
 * no `input`: they inform {@link buildResumeJournalNote}, but
 * {@link findCompletedJournalEntry} never matches them (the receipts
 * themselves guard repeated calls).
 */
export function journalFromReceipts(records: readonly JournalReceiptRecord[]): ToolCallJournal {
  const sortKey = (ms: number): number => (Number.isFinite(ms) ? ms : Number.POSITIVE_INFINITY);
  const sorted = records
    .map((record, index) => ({ record, index, at: sortKey(record.createdMs) }))
    .sort((a, b) => (a.at < b.at ? -1 : a.at > b.at ? 1 : a.index - b.index));

  const completed: ToolCallJournalEntry[] = [];
  const interrupted: ToolCallJournalEntry[] = [];
  sorted.forEach(({ record }, order) => {
    const entry = makeEntry('tool' in record ? record.tool : record.key.toolName, undefined, undefined, order);
    if (record.status === 'completed') {
      const result = resultText(recordedToolResultContent(record.result) ?? record.result);
      completed.push(result === undefined ? entry : { ...entry, result });
      return;
    }
    const ambiguous = typeof record.ambiguousMs === 'number';
    if (record.status === 'running' && (ambiguous || record.leaseExpired === true)) interrupted.push(entry);
  });
  return { completed, interrupted };
}
