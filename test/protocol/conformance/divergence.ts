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
