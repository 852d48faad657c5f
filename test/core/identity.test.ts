import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import {
  hmacSha256Digest,
  InvalidDigestSecretError,
  sha256Digest,
  toolCallArgsHash,
  toolCallReceiptKeyString,
  type ToolCallReceiptKey,
} from '../../src/core/identity.js';
import { CanonicalJsonError } from '../../src/core/canonical-json.js';

// Parts made of the characters that could fool a naive encoding: digits, the
// length prefix's colon, and common delimiters.
const trickyPart = fc.string({ unit: fc.constantFrom('0', '1', '9', ':', '|', '{', '}', '/', ' ', 'a', '\n'), maxLength: 12 });
const anyPart = fc.oneof(trickyPart, fc.string(), fc.string({ unit: 'grapheme' }));
const keyArb = fc.record({ tenantId: anyPart, runId: anyPart, toolName: anyPart, argsHash: anyPart });

describe('toolCallReceiptKeyString', () => {
  it('length-prefixes each part', () => {
    expect(toolCallReceiptKeyString({ tenantId: 't', runId: 'r1', toolName: 'send:email', argsHash: 'ab' })).toBe(
      '1:t2:r110:send:email2:ab',
    );
  });

  it('property: distinct key tuples give distinct strings', () => {
    fc.assert(
      fc.property(keyArb, keyArb, (a: ToolCallReceiptKey, b: ToolCallReceiptKey) => {
        const same = a.tenantId === b.tenantId && a.runId === b.runId && a.toolName === b.toolName && a.argsHash === b.argsHash;
        expect(toolCallReceiptKeyString(a) === toolCallReceiptKeyString(b)).toBe(same);
      }),
      { numRuns: 2000 },
    );
  });

  it('property: moving characters across a boundary changes the string', () => {
    fc.assert(
      fc.property(trickyPart, trickyPart, fc.nat(), (x, y, cut) => {
        const joined = x + y;
        const at = cut % (joined.length + 1);
        const a = { tenantId: x, runId: y, toolName: 't', argsHash: 'h' };
        const b = { tenantId: joined.slice(0, at), runId: joined.slice(at), toolName: 't', argsHash: 'h' };
        expect(toolCallReceiptKeyString(a) === toolCallReceiptKeyString(b)).toBe(at === x.length);
      }),
      { numRuns: 1000 },
    );
  });
});

describe('toolCallArgsHash', () => {
  it('defaults to full-width sha256 hex of the canonical form', async () => {
    const h = await toolCallArgsHash({ b: 1, a: [true, null] });
    expect(h).toMatch(/^[0-9a-f]{64}$/);
    expect(h).toBe(await sha256Digest('{"a":[true,null],"b":1}'));
    expect(await toolCallArgsHash({ a: [true, null], b: 1 })).toBe(h);
  });

  it('keeps the digest every earlier version stored: SHA-256 of the UTF-8 canonical text', async () => {
    // Receipts already in Redis are found by this digest; a change here would run their calls again.
    expect(await sha256Digest('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
    expect(await toolCallArgsHash({ to: 'ü@x.test', n: 1 })).toBe(
      createHash('sha256').update('{"n":1,"to":"ü@x.test"}', 'utf8').digest('hex'),
    );
  });

  it('differs between argument bags that differ', async () => {
    expect(await toolCallArgsHash({ to: 'a@x.test' })).not.toBe(await toolCallArgsHash({ to: 'b@x.test' }));
    expect(await toolCallArgsHash({})).not.toBe(await toolCallArgsHash({ a: null }));
  });

  it('a keyed digest depends on the secret and is not the unkeyed hash', async () => {
    const args = { to: 'someone@example.test' };
    const k1 = await toolCallArgsHash(args, hmacSha256Digest('secret-1'));
    const k2 = await toolCallArgsHash(args, hmacSha256Digest('secret-2'));
    expect(k1).toMatch(/^[0-9a-f]{64}$/);
    expect(k1).not.toBe(k2);
    expect(k1).not.toBe(await toolCallArgsHash(args));
    expect(await toolCallArgsHash(args, hmacSha256Digest(Buffer.from('secret-1')))).toBe(k1);
  });

  it('refuses an empty secret with a typed error', () => {
    expect(() => hmacSha256Digest('')).toThrow(InvalidDigestSecretError);
  });

  it('refuses a secret of whitespace only, as a string or a Buffer, and takes a Buffer with any other byte', () => {
    for (const blank of [' ', '\n', ' \t\r\n', Buffer.alloc(0), Buffer.from(' '), Buffer.from('\n'), Buffer.from(' \t\r\n')]) {
      expect(() => hmacSha256Digest(blank), JSON.stringify(String(blank))).toThrow(InvalidDigestSecretError);
    }
    expect(() => hmacSha256Digest(Buffer.from('\n'))).toThrow(/got a Buffer of whitespace only/);
    expect(hmacSha256Digest(Buffer.from([0x0a, 0x00]))('x')).toMatch(/^[0-9a-f]{64}$/);
  });

  it('accepts an async digest and passes canonical text to it', async () => {
    const seen: string[] = [];
    const h = await toolCallArgsHash({ z: 1, y: 2 }, async (c) => {
      seen.push(c);
      return `len${c.length}`;
    });
    expect(seen).toEqual(['{"y":2,"z":1}']);
    expect(h).toBe('len13');
  });

  it('propagates canonicalJson errors instead of hashing a lossy form', async () => {
    await expect(toolCallArgsHash({ when: new Map() })).rejects.toBeInstanceOf(CanonicalJsonError);
  });
});
