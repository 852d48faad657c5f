/**
 * Make `target` abort (with the same reason) when `source` does. Returns a
 * function that removes the link. Cheaper than `AbortSignal.any`, which the
 * wrapper would otherwise create twice per call.
 */
export function forwardAbort(source: AbortSignal | undefined, target: AbortController): () => void {
  if (!source) return () => undefined;
  if (source.aborted) {
    target.abort(source.reason);
    return () => undefined;
  }
  const onAbort = () => target.abort(source.reason);
  source.addEventListener('abort', onAbort, { once: true });
  return () => source.removeEventListener('abort', onAbort);
}
