/**
 * Every mention of a round trip in the README and docs, as
 * `round-trip-figures.test.ts` checks them: the text around it (whitespace
 * collapsed) and either the figures it states, each against a line of the
 * round-trip tables in docs/performance.md, or why it counts nothing of
 * ours. A new mention fails that test until it is listed here.
 */

/** A figure a mention states, and the table line that must say the same. */
export interface StatedFigure {
  /** The figure as written: a number, a number word, or `k + 1` / `2k`. */
  readonly says: string;
  readonly table?: 'calls' | 'waits';
  readonly line: string;
  readonly side?: 'ours' | 'peer';
  /** Compare at this k only (a per-k figure against a three-call line); default every k from 1 to 3. */
  readonly k?: number;
}

export interface RoundTripMention {
  readonly file: string;
  readonly text: string;
  readonly figures?: readonly StatedFigure[];
  /** Why a mention states no figure of ours to check. */
  readonly why?: string;
}

export const DOCS = [
  'README.md',
  'docs/concepts.md',
  'docs/observability.md',
  'docs/performance.md',
  'docs/redis.md',
  'docs/tools.md',
  'docs/worker.md',
] as const;

const WORDS: Readonly<Record<string, number>> = { no: 0, nothing: 0, one: 1, once: 1, two: 2, twice: 2, three: 3, four: 4, six: 6 };

/** `text` as a count (`4`, `four`, `twice`), or `undefined`. */
export function asFigure(text: string): number | undefined {
  if (/^\d+$/.test(text)) return Number(text);
  return WORDS[text.toLowerCase()];
}

const ONE = 'one call, executed';
const REPLAY = 'one call, replayed';
const READ_ONLY = 'one read-only call';
const TURN_OF_K = 'a turn of k calls one after another, executed';
const TURN = 'a three-call turn one after another, executed';
const UNFUSED = 'a three-call turn through the store, each call claimed and completed on its own';
const TOGETHER = 'three calls side by side, finishing together';
const APART = 'three calls side by side, finishing one at a time';
const RTT = 'the network delay the bench adds, not a count';

export const MENTIONS: readonly RoundTripMention[] = [
  { file: 'README.md', text: 'Replays are faster here (one round trip)', figures: [{ says: 'one', line: REPLAY }] },
  { file: 'README.md', text: 'a delaying proxy that adds a network round trip', why: RTT },
  {
    file: 'README.md',
    text: 'its fused turn (k + 1 round trips against 2k)',
    figures: [
      { says: 'k + 1', line: TURN_OF_K },
      { says: '2k', line: TURN_OF_K, side: 'peer' },
    ],
  },
  { file: 'docs/concepts.md', text: 'runs the tool with no Redis round trip', figures: [{ says: 'no', line: READ_ONLY }] },
  { file: 'docs/concepts.md', text: 'returns the recorded result; one Redis round trip', figures: [{ says: 'one', line: REPLAY }] },
  { file: 'docs/tools.md', text: 'no receipt, no Redis round trip', figures: [{ says: 'no', line: READ_ONLY }] },
  {
    file: 'docs/worker.md',
    text: 'a turn of k executed calls costs k + 1 round trips, not 2k',
    figures: [
      { says: 'k + 1', line: TURN_OF_K },
      { says: '2k', line: UNFUSED, k: 3 },
    ],
  },
  { file: 'docs/observability.md', text: 'The claim and settle round trips get child spans', why: 'which commands get spans' },
  { file: 'docs/observability.md', text: "a call claimed by another's round trip has no claim span", why: 'which commands get spans' },
  { file: 'docs/observability.md', text: 'validation, hashing, round trips, shaping', why: 'what a histogram measures' },
  {
    file: 'docs/redis.md',
    text: 'While replicas answer this costs a replica round trip per turn of the event loop',
    why: 'how long a shared WAIT holds the connection, per tick rather than per call',
  },
  { file: 'docs/performance.md', text: 'holds each chunk half a round trip each way', why: RTT },
  { file: 'docs/performance.md', text: 'Default one round trip of 0.5 ms', why: RTT },
  {
    file: 'docs/performance.md',
    text: 'a replay 157 µs against 170 (0.70 / 0.76 / 0.94: one round trip against two)',
    figures: [
      { says: 'one', line: REPLAY },
      { says: 'two', line: REPLAY, side: 'peer' },
    ],
  },
  { file: 'docs/performance.md', text: 'more jobs/s needs less CPU per job, whatever the round trips', why: 'a remark on CPU' },
  { file: 'docs/performance.md', text: 'Loopback hides what a round trip costs', why: RTT },
  { file: 'docs/performance.md', text: 'takes the asked round trip more than one straight to Redis', why: RTT },
  {
    file: 'docs/performance.md',
    text: 'makes two round trips on either side',
    figures: [
      { says: 'two', line: ONE },
      { says: 'two', line: ONE, side: 'peer' },
    ],
  },
  {
    file: 'docs/performance.md',
    text: "makes 4 receipt round trips against the peer's 6",
    figures: [
      { says: '4', line: TURN },
      { says: '6', line: TURN, side: 'peer' },
    ],
  },
  {
    file: 'docs/performance.md',
    text: "BullMQ's own round trips (fetch and finish, *bare* above: 1.3 round trips a job at c=1)",
    why: "BullMQ's own, measured by the bench (bare)",
  },
  { file: 'docs/performance.md', text: 'both sides keep many round trips in flight', why: 'a remark on concurrency' },
  { file: 'docs/performance.md', text: "fewer of them wait behind each other's round trips", why: 'a remark on concurrency' },
  { file: 'docs/performance.md', text: 'costs k + 1 round trips for k executed calls', figures: [{ says: 'k + 1', line: TURN_OF_K }] },
  {
    file: 'docs/performance.md',
    text: 'three parallel calls cost 3 round trips when they finish together',
    figures: [{ says: '3', line: TOGETHER }],
  },
  { file: 'docs/performance.md', text: 'and 4 when they finish one at a time', figures: [{ says: '4', line: APART }] },
  {
    file: 'docs/performance.md',
    text: 'A three-call turn through the queue makes 4 receipt round trips',
    figures: [{ says: '4', line: TURN }],
  },
  { file: 'docs/performance.md', text: 'where the peer makes 6', figures: [{ says: '6', line: TURN, side: 'peer' }] },
  { file: 'docs/performance.md', text: 'so it saves round trips, not Redis time', why: 'a remark on Redis time' },
  { file: 'docs/performance.md', text: 'against 779 µs as six round trips', figures: [{ says: 'six', line: UNFUSED }] },
  { file: 'docs/performance.md', text: 'each saved round trip is a full RTT', why: RTT },
  { file: 'docs/performance.md', text: 'CPU-bound before it is round-trip-bound', why: 'a remark on CPU' },
  {
    file: 'docs/performance.md',
    text: "## Round trips What calls send to the receipts' Redis, each command one round trip (a group commit batch is one)",
    why: 'the tables themselves',
  },
  {
    file: 'docs/performance.md',
    text: '`test/docs/round-trip-figures.test.ts` reads these tables, runs each line against Redis (ours through a BullMQ worker, the peer through `makeIdempotent`) and checks every round-trip figure in these pages against them.',
    why: 'the tables themselves',
  },
  {
    file: 'docs/performance.md',
    text: 'An executed call waits twice (after the claim, after the complete; in a turn run one after another a complete that claims the next call waits once for both), each a round trip to the primary',
    figures: [{ says: 'twice', table: 'waits', line: ONE }],
  },
  {
    file: 'docs/performance.md',
    text: 'add two replica round trips per executed call',
    figures: [{ says: 'two', table: 'waits', line: ONE }],
  },
  { file: 'docs/performance.md', text: 'A replayed call waits for nothing', figures: [{ says: 'nothing', table: 'waits', line: REPLAY }] },
];
