/**
 * The pure parts of approvals as properties: a receipt key leads back to the
 * run index and counting set its claim uses (and nothing else is taken for
 * one), and a rule's answer asks a person for anything but a falsy one.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { approvalScriptKeys } from '../../src/approvals/keys.js';
import { approvalNeeded } from '../../src/approvals/gate.js';
import { callRedisKeys } from '../../src/redis/keys.js';

const name = fc.string({ minLength: 1, maxLength: 12, unit: 'grapheme' });
const prefix = fc.stringMatching(/^[A-Za-z0-9._~-]{1,8}$/);
const ctx = { tenantId: 't', runId: 'r', toolName: 'x', callId: 'c' };

describe('approvalScriptKeys', () => {
  it('property: gives the receipt, run index and counting set the claim of that call uses', () => {
    fc.assert(
      fc.property(prefix, name, name, name, name, (p, tenantId, runId, toolName, argsHash) => {
        const [receipt, index, , count] = callRedisKeys(p, { tenantId, runId, toolName, argsHash });
        expect(approvalScriptKeys(p, receipt)).toEqual([receipt, index, count]);
      }),
    );
  });

  it('property: refuses a key under another prefix, or that is no receipt key', () => {
    fc.assert(
      fc.property(prefix, prefix, name, name, fc.string({ maxLength: 30 }), (p, other, tenantId, runId, junk) => {
        fc.pre(p !== other && !other.startsWith(`${p}:`) && !p.startsWith(`${other}:`));
        const [receipt] = callRedisKeys(other, { tenantId, runId, toolName: 'x', argsHash: 'h' });
        expect(() => approvalScriptKeys(p, receipt)).toThrow(expect.objectContaining({ code: 'receipt.invalid_input' }));
        fc.pre(!junk.startsWith(`${p}:rcpt:{`));
        expect(() => approvalScriptKeys(p, junk)).toThrow(expect.objectContaining({ code: 'receipt.invalid_input' }));
      }),
    );
  });
});

describe('approvalNeeded', () => {
  it('property: asks for any truthy answer, keeps a string reason, and not for a falsy one', () => {
    fc.assert(
      fc.property(fc.anything(), (answer) => {
        const needed = approvalNeeded(() => answer as boolean, {}, ctx);
        if (!answer) {
          expect(needed).toBeUndefined();
          return;
        }
        const reason = typeof answer === 'object' ? (answer as { reason?: unknown }).reason : undefined;
        expect(needed).toEqual(typeof reason === 'string' && reason !== '' ? { reason } : {});
      }),
    );
  });

  it("'always' asks, no rule never does", () => {
    expect(approvalNeeded('always', {}, ctx)).toEqual({});
    expect(approvalNeeded(undefined, {}, ctx)).toBeUndefined();
  });
});
