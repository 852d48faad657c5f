/**
 * Runs `each` on every item `source` yields, with at most `limit` of them in
 * flight, so this process reads one batch's replies while the server works on
 * the next. Stops at the first failure and throws it once every started item
 * has settled (an item never rejects on its own, so nothing goes unhandled).
 */
export async function forEachBounded<T>(source: AsyncIterable<T>, limit: number, each: (item: T) => Promise<void>): Promise<void> {
  const inFlight = new Set<Promise<void>>();
  let failure: { error: unknown } | undefined;
  for await (const item of source) {
    const started: Promise<void> = each(item)
      .catch((error: unknown) => void (failure ??= { error }))
      .finally(() => inFlight.delete(started));
    inFlight.add(started);
    if (inFlight.size >= limit) await Promise.race(inFlight);
    if (failure) break;
  }
  await Promise.all(inFlight);
  if (failure) throw failure.error;
}
