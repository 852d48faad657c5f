/**
 * Bearer tokens as every HTTP listener of this package checks them: long
 * enough not to be guessed, and compared in constant time.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';

/** Shortest token accepted: a guessable token is no defence. */
export const MIN_TOKEN_LENGTH = 16;

const digest = (text: string): Buffer => createHash('sha256').update(text, 'utf8').digest();

/** Constant-time equality of two strings (compared as digests, so their lengths leak nothing either). */
export function sameSecret(given: string, expected: string): boolean {
  return timingSafeEqual(digest(given), digest(expected));
}

/** The token of an `Authorization: Bearer <token>` header, or `undefined` when the request sends none. */
export function bearerToken(req: IncomingMessage): string | undefined {
  const header = req.headers.authorization;
  if (typeof header === 'string' && /^Bearer /i.test(header)) return header.slice(7).trim();
  return undefined;
}
