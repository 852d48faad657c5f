/**
 * The compact layout's members: `callMember` (src/redis/keys.ts) and
 * countMember (lua/includes/count-score.lua) must make the same member from
 * the same key, or a run's index would name a receipt one way in Node and
 * another in Lua; `callPartOfMember` (src/redis/key-parts.ts) must undo either form, and
 * `receiptKeyOfRunEntry` must give back the key of every entry a run index
 * can hold. Checked on random names against the real script on a real server.
 */
import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { sha256Digest } from '../../src/core/identity.js';
import { callMember, receiptRedisKey, runIndexRedisKey } from '../../src/redis/keys.js';
import { callPartOfMember, receiptKeyOfRunEntry } from '../../src/redis/key-parts.js';
import { useRedis } from '../support/redis-fixture.js';

const fixture = useRedis();
const countScore = readFileSync(new URL('../../lua/includes/count-score.lua', import.meta.url), 'utf8');
/** The include as is, then each key's member both ways, in one round trip. */
const MEMBERS_SCRIPT = `${countScore}
local out = {}
for i = 1, #KEYS do out[#out + 1] = countMember(KEYS[i], false); out[#out + 1] = countMember(KEYS[i], true) end
return out`;

/** The part of a receipt key after its hash tag. */
const callPartOf = (key: string) => key.slice(key.indexOf('}:') + 2);

const names = fc.string({ unit: 'grapheme', maxLength: 24 });
const digests = fc.oneof(
  fc.string().map((text) => sha256Digest(text) as string),
  fc.string({ maxLength: 70 }),
  fc.stringMatching(/^[0-9a-f]{64}$/).map((hex) => hex.toUpperCase()),
);
const calls = fc.record({ tenantId: names, runId: names, toolName: names, argsHash: digests });

describe('compact members', () => {
  it('Node and Lua make the same member from every key, and each member leads back to its key', async () => {
    const redis = fixture.connect();
    await fc.assert(
      fc.asyncProperty(fc.array(calls, { minLength: 1, maxLength: 8 }), async (batch) => {
        const keys = batch.map((call) => receiptRedisKey('trc', call));
        // A script may touch only one slot on a Cluster; this one touches none, and the fixture's server is standalone.
        const reply = (await redis.eval(MEMBERS_SCRIPT, keys.length, ...keys)) as string[];
        batch.forEach((call, i) => {
          const key = keys[i] as string;
          const part = callPartOf(key);
          const compact = callMember(part, true);
          expect(reply[2 * i]).toBe(part);
          expect(reply[2 * i + 1]).toBe(compact);
          expect(callMember(part, false)).toBe(part);
          expect(callPartOfMember(compact)).toBe(part);
          const indexKey = runIndexRedisKey('trc', call.tenantId, call.runId);
          expect(receiptKeyOfRunEntry(indexKey, compact)).toBe(key);
          expect(receiptKeyOfRunEntry(indexKey, key)).toBe(key);
        });
      }),
      { numRuns: 60 },
    );
  });

  it('a default digest is written as 43 base64url characters, so a short tool name keeps the member within 64 bytes', () => {
    const digest = sha256Digest('{"to":"ana@example.com"}') as string;
    const member = callMember(`send_email:${digest}`, true);
    expect(member).toMatch(/^send_email=[A-Za-z0-9_-]{43}$/);
    expect(callMember(`a${'b'.repeat(19)}:${digest}`, true).length).toBe(64);
    // Any other digest keeps its part as it is: nothing to shorten without knowing its shape.
    expect(callMember(`send_email:${digest.toUpperCase()}`, true)).toBe(`send_email:${digest.toUpperCase()}`);
  });
});
