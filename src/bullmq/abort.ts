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

/**
 * Abort state that makes its `AbortSignal` only when something reads
 * `signal`. A job and each executed call need one that follows its parent
 * (BullMQ's signal, the job's), yet most calls end without anyone asking for
 * the signal, and an AbortController with its listener link is among the
 * dearest things a call would otherwise create (the bench measures it).
 * `aborted` and `reason` read through to the parent without making anything.
 *
 * The first abort wins: its reason is the one every reader sees, whether it
 * came from the parent or from {@link abort}.
 */
export class LazyAbort {
  #controller: AbortController | undefined;
  #unlink: (() => void) | undefined;
  #aborted = false;
  #reason: unknown;

  constructor(private readonly parent?: AbortSignal | LazyAbort) {}

  get aborted(): boolean {
    return this.#aborted || (this.parent?.aborted ?? false);
  }

  get reason(): unknown {
    return this.#aborted ? this.#reason : this.parent?.reason;
  }

  /** A real signal, made on first read, linked to the parent's until {@link dispose}. */
  get signal(): AbortSignal {
    if (this.#controller === undefined) {
      const controller = new AbortController();
      this.#controller = controller;
      if (this.aborted) controller.abort(this.reason);
      else if (this.parent) this.#unlink = forwardAbort(this.parent instanceof LazyAbort ? this.parent.signal : this.parent, controller);
    }
    return this.#controller.signal;
  }

  /** Aborts with `reason` unless already aborted (by the parent or earlier). */
  abort(reason: unknown): void {
    if (this.aborted) return;
    this.#aborted = true;
    this.#reason = reason;
    this.#controller?.abort(reason);
  }

  throwIfAborted(): void {
    if (this.aborted) throw this.reason;
  }

  /** Removes the link to the parent's signal, if a signal was made. */
  dispose(): void {
    this.#unlink?.();
    this.#unlink = undefined;
  }
}
