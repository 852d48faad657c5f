/**
 * Unguessable tokens for the keyspace's writes (a lifetime's epoch, a limit
 * reservation's id, a cap slot's holder), drawn from the CSPRNG in blocks:
 * one `randomBytes` call per token was a measurable share of a call's CPU.
 * Each byte is used once.
 */
import { randomBytes } from 'node:crypto';

/** Bytes of one token: 96 bits, 16 characters as base64url. */
const TOKEN_BYTES = 12;
/** Tokens drawn from the generator per refill. */
const POOL_TOKENS = 256;

let pool = Buffer.alloc(0);
let offset = 0;

/** A fresh token of 12 random bytes as base64url (16 characters, none of them a space). */
export function randomToken(): string {
  if (offset + TOKEN_BYTES > pool.length) {
    pool = randomBytes(TOKEN_BYTES * POOL_TOKENS);
    offset = 0;
  }
  const token = pool.toString('base64url', offset, offset + TOKEN_BYTES);
  offset += TOKEN_BYTES;
  return token;
}
