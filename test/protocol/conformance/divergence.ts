/**
 * What the conformance walk throws when the real system and the model
 * disagree, and the one comparison every step makes.
 */
export class Divergence extends Error {}

/** Throws a {@link Divergence} naming `what` unless the real and the model's values are the same. */
export function expectSame(what: string, real: unknown, model: unknown): void {
  if (JSON.stringify(real) !== JSON.stringify(model)) {
    throw new Divergence(`${what}: the real system answered ${JSON.stringify(real)}, the model ${JSON.stringify(model)}`);
  }
}

/**
 * The walk fell behind the server's clock (a step ran past the first half
 * of its tick), so a deadline may have passed on the server a tick before it
 * did in the model: not a divergence; the walk stops without a verdict.
 */
export class FellBehind extends Error {}
