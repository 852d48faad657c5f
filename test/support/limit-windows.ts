/**
 * Fixed limit windows that a test's calls do not straddle. A fixed window is
 * aligned on the Redis server clock at multiples of its length, so a test
 * whose reserves must share one window fails when it runs across that
 * window's end (an hour's on CI at hh:59:59, a minute's every minute): the
 * later reserve sees a fresh count. Either the window is so long that no
 * test meets its end, or the test waits for one with time left.
 */
import type { Limit, LimitStore, LimitSubject } from '../../src/limits/index.js';
import { waitUntil } from './redis-fixture.js';

/**
 * A fixed window's length for a test that asserts nothing of the length:
 * 365 days (within MAX_LIMIT_WINDOW_MS), whose end a test practically never
 * meets.
 */
export const YEAR_MS = 365 * 86_400_000;

/**
 * Waits until `limit`'s fixed window (aligned on the server clock) has
 * `leftMs` left, read through `store`; for a test whose assertions need the
 * window's length (a printed `1 h`), so its window cannot be made long. A
 * test whose reserves straddle a window's end sees a fresh count, and one
 * within a reservation's span of it is told `full` (the window frees first)
 * where it is otherwise told `held`: `leftMs` covers the test's reserves
 * and their reservations.
 */
export async function clearOfWindowEnd(store: LimitStore, limit: Limit, subject: LimitSubject, leftMs: number): Promise<void> {
  await waitUntil(
    () => store.usage(limit, subject),
    (usage) => usage.windowStartMs + limit.windowMs - usage.nowMs >= leftMs,
    // At worst the current window has just under leftMs left: the next one, a whole window, has enough.
    leftMs + 10_000,
    'a window with time left',
  );
}
