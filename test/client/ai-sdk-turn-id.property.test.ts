import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { aiSdkTurnId, type AiSdkToolCallContext } from '../../src/client/index.js';
import { canonicalJson } from '../../src/core/index.js';

// Small domains, so two draws are often equal and the "same id" side is exercised too.
const smallJson = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small' },
    fc.constantFrom(null, true, 0, 1, 'a', 'b', ''),
    fc.array(tie('value'), { maxLength: 2 }),
    fc.dictionary(fc.constantFrom('x', 'y', 'z'), tie('value'), { maxKeys: 2 }),
  ),
})).value;
const context = fc.record({
  toolCallId: fc.constantFrom('call_0', 'call_1'),
  toolName: fc.constantFrom('create_ticket', 'send_email'),
  input: smallJson,
  messages: fc.array(fc.record({ role: fc.constantFrom('user', 'assistant', 'tool'), content: smallJson }), { maxLength: 3 }),
});

/** The same value with every object's keys in reverse order. */
const reversedKeys = (value: unknown): unknown => {
  if (Array.isArray(value)) return value.map(reversedKeys);
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(
    Object.entries(value)
      .reverse()
      .map(([k, v]) => [k, reversedKeys(v)]),
  );
};

describe('aiSdkTurnId', () => {
  it('is ai-sdk:<toolCallId>:<32 hex digits>', async () => {
    const id = await aiSdkTurnId({ toolCallId: 'call_0', toolName: 't', input: {}, messages: [] });
    expect(id).toMatch(/^ai-sdk:call_0:[0-9a-f]{32}$/);
  });

  it('two calls share an id exactly when id, tool, input and step messages are the same, whatever the key order', async () => {
    await fc.assert(
      fc.asyncProperty(context, context, async (a, b) => {
        const same = canonicalJson(a) === canonicalJson(b);
        expect((await aiSdkTurnId(a)) === (await aiSdkTurnId(b))).toBe(same);
        expect(await aiSdkTurnId(reversedKeys(a) as AiSdkToolCallContext)).toBe(await aiSdkTurnId(a));
      }),
      { numRuns: 300 },
    );
  });

  it('a reused provider id with the same tool and input still differs from one step to the next', async () => {
    const call = { toolCallId: 'call_0', toolName: 'create_ticket', input: { title: 'Printer' } };
    const step1 = [{ role: 'user', content: 'open one' }];
    const step2 = [...step1, { role: 'assistant', content: [{ type: 'tool-call', toolCallId: 'call_0' }] }, { role: 'tool', content: [] }];
    expect(await aiSdkTurnId({ ...call, messages: step1 })).not.toBe(await aiSdkTurnId({ ...call, messages: step2 }));
  });

  it('bytes count by their content, however they are held', async () => {
    const withImage = (image: unknown) =>
      aiSdkTurnId({ toolCallId: 'c', toolName: 't', input: {}, messages: [{ role: 'user', content: [{ type: 'image', image }] }] });
    const bytes = [1, 2, 3];
    const asUint8 = await withImage(new Uint8Array(bytes));
    expect(await withImage(Buffer.from(bytes))).toBe(asUint8);
    expect(await withImage(new Uint8Array(bytes).buffer)).toBe(asUint8);
    expect(await withImage(new Uint8Array([9, 0, 1, 2, 3]).subarray(2))).toBe(asUint8);
    expect(await withImage(new Uint8Array([1, 2, 4]))).not.toBe(asUint8);
    expect(await withImage(new Uint8Array([]))).not.toBe(await withImage(new ArrayBuffer(1)));
  });
});
