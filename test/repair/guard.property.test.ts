import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { guardReshaped, type AssistantMessage, type ContentBlock } from '../../src/repair/index.js';
import { deepEqual } from '../../src/core/deep-equal.js';
import { assistantMessage, SAFE_NAMES } from './arbitraries.js';

const never = (): boolean => false;
const RUNS = { numRuns: 1000 };

type Mutation = (content: ContentBlock[], pick: (n: number) => number) => ContentBlock[] | null;

const isTool = (b: ContentBlock): boolean => b.type === 'tool_use';
const indexesOf = (content: ContentBlock[], test: (b: ContentBlock) => boolean): number[] =>
  content.flatMap((b, i) => (test(b) ? [i] : []));

/** Single-point structural mutations; each returns null when it does not apply to the message. */
const MUTATIONS: Record<string, Mutation> = {
  addToolUse: (c, pick) => {
    const at = pick(c.length + 1);
    return [...c.slice(0, at), { type: 'tool_use', id: 'toolu_new', name: SAFE_NAMES[0], input: {} }, ...c.slice(at)];
  },
  dropBlock: (c, pick) => (c.length === 0 ? null : c.filter((_, i) => i !== pick(c.length))),
  dropToolUse: (c, pick) => {
    const tools = indexesOf(c, isTool);
    const victim = tools[pick(tools.length)];
    return victim === undefined ? null : c.filter((_, i) => i !== victim);
  },
  swapBlocks: (c, pick) => {
    const pairs = c.flatMap((a, i) => c.flatMap((b, j) => (i < j && !deepEqual(a, b) ? [[i, j] as const] : [])));
    const pair = pairs[pick(pairs.length)];
    if (pair === undefined) return null;
    const out = [...c];
    [out[pair[0]], out[pair[1]]] = [c[pair[1]]!, c[pair[0]]!];
    return out;
  },
  renameTool: (c, pick) => editTool(c, pick, (b) => ({ ...b, name: `${String(b.name)}_v2` })),
  changeId: (c, pick) => editTool(c, pick, (b) => ({ ...b, id: `${String(b.id)}_x` })),
  changeText: (c, pick) => {
    const texts = indexesOf(c, (b) => b.type === 'text');
    const at = texts[pick(texts.length)];
    if (at === undefined) return null;
    return c.map((b, i) => (i === at ? { ...b, text: `${String(b.text)}!` } : b));
  },
  changeOpaque: (c, pick) => {
    const others = indexesOf(c, (b) => !isTool(b));
    const at = others[pick(others.length)];
    if (at === undefined) return null;
    return c.map((b, i) => (i === at ? { ...b, type: `${b.type}_x` } : b));
  },
  insertText: (c, pick) => {
    const at = pick(c.length + 1);
    return [...c.slice(0, at), { type: 'text', text: 'inserted' }, ...c.slice(at)];
  },
};

function editTool(c: ContentBlock[], pick: (n: number) => number, edit: (b: ContentBlock) => ContentBlock): ContentBlock[] | null {
  const tools = indexesOf(c, isTool);
  const at = tools[pick(tools.length)];
  return at === undefined ? null : c.map((b, i) => (i === at ? edit(b) : b));
}

const pickFrom =
  (seed: number) =>
  (n: number): number =>
    n <= 0 ? 0 : seed % n;

describe('guardReshaped properties', () => {
  for (const [name, mutate] of Object.entries(MUTATIONS)) {
    it(`rejects every generated ${name} mutation`, () => {
      fc.assert(
        fc.property(assistantMessage(), fc.nat(), (original, seed) => {
          const content = mutate(original.content, pickFrom(seed));
          fc.pre(content !== null);
          const candidate: AssistantMessage = { ...original, content: content! };
          expect(guardReshaped(original, candidate, never)).toBe('failed');
        }),
        RUNS,
      );
    });
  }

  it('accepts every change confined to tool_use inputs', () => {
    fc.assert(
      fc.property(assistantMessage(), fc.array(fc.jsonValue(), { minLength: 8, maxLength: 8 }), (original, inputs) => {
        const candidate: AssistantMessage = {
          ...original,
          content: original.content.map((b, i) => (isTool(b) ? { ...b, input: inputs[i] } : structuredClone(b))),
        };
        expect(guardReshaped(original, candidate, never)).toBeNull();
      }),
      RUNS,
    );
  });

  it('refuses every candidate that names a destructive tool', () => {
    fc.assert(
      fc.property(assistantMessage(), fc.constantFrom(...SAFE_NAMES), (original, destructiveName) => {
        fc.pre(original.content.some((b) => isTool(b) && b.name === destructiveName));
        const isDestructive = (name: string): boolean => name === destructiveName;
        expect(guardReshaped(original, original, isDestructive)).toBe('refused_destructive');
      }),
      RUNS,
    );
  });
});
