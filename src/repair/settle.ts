/** How a call raced against an abort signal ended. */
export type Settled<T> = { kind: 'value'; value: T } | { kind: 'error'; error: unknown } | { kind: 'aborted' };

/**
 * Runs `start` and waits for it or for `signal` to abort, whichever comes
 * first. A synchronous throw counts as an error. When the abort wins, the
 * late outcome of the call is still observed, so it never surfaces as an
 * unhandled rejection.
 */
export function settleOrAbort<T>(start: () => Promise<T>, signal: AbortSignal | undefined): Promise<Settled<T>> {
  if (signal?.aborted === true) return Promise.resolve({ kind: 'aborted' });
  let promise: Promise<T>;
  try {
    promise = Promise.resolve(start());
  } catch (error) {
    return Promise.resolve({ kind: 'error', error });
  }
  return new Promise<Settled<T>>((resolve) => {
    const onAbort = (): void => resolve({ kind: 'aborted' });
    signal?.addEventListener('abort', onAbort, { once: true });
    if (signal?.aborted === true) onAbort();
    promise.then(
      (value) => {
        signal?.removeEventListener('abort', onAbort);
        resolve({ kind: 'value', value });
      },
      (error: unknown) => {
        signal?.removeEventListener('abort', onAbort);
        resolve({ kind: 'error', error });
      },
    );
  });
}
