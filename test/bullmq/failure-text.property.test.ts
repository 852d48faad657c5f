/**
 * The text a model reads after a failure is sentences: `asSentence` ends a
 * text with exactly one sentence mark (idempotent, nothing but a trim and a
 * full stop changed), and `failureContent` joins the error and the advice
 * with ". ".
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { TIER_SUFFIX, type FailureTier } from '../../src/core/index.js';
import { asSentence, failureContent } from '../../src/bullmq/tools/failure-text.js';

const tiers = Object.keys(TIER_SUFFIX) as FailureTier[];

describe('asSentence', () => {
  it('is idempotent and only trims and adds a full stop', () => {
    fc.assert(
      fc.property(fc.string(), (text) => {
        const once = asSentence(text);
        expect(asSentence(once)).toBe(once);
        const trimmed = text.trim();
        if (trimmed === '') expect(once).toBe('');
        else expect([trimmed, `${trimmed}.`]).toContain(once);
        if (once !== '') expect(once).toMatch(/[.!?]["'\u2019\u201d)\]]*$/u);
      }),
    );
  });

  it('leaves a text that already ends a sentence as it is', () => {
    for (const text of ['done.', 'really?', 'stop!', 'he said "no."', '(see the log.)']) expect(asSentence(text)).toBe(text);
  });
});

describe('failureContent', () => {
  it('is the error as a sentence, then the advice, one space apart', () => {
    fc.assert(
      fc.property(fc.string(), fc.constantFrom(...tiers), (message, tier) => {
        const content = failureContent('sync', message, tier);
        const error = asSentence(message);
        expect(content).toBe(error === '' ? `Tool sync failed. ${TIER_SUFFIX[tier]}` : `Tool sync failed: ${error} ${TIER_SUFFIX[tier]}`);
      }),
    );
  });
});
