/**
 * The base of every error this package throws on purpose.
 *
 * Callers branch on `code`, never on the message: codes are part of the public
 * API and do not change between releases, while messages may be reworded.
 */
export abstract class ToolReceiptsError extends Error {
  /** A stable, dotted identifier such as `canonical_json.cycle`. */
  abstract readonly code: string;

  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}
