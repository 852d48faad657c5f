/**
 * The result-store contract's basic cases: put, get, refs that must be
 * refused.
 */
import assert from 'node:assert/strict';
import { buildToolResultRef, MAX_TOOL_RESULT_REF_CHARS } from '../ref.js';
import { readAll, type ToolResultStoreContractCase } from './support.js';

const UNSAFE_REFS: readonly string[] = [
  '',
  '.',
  '..',
  'a/b',
  'a\\b',
  'a\u0000b',
  'a\nb',
  'a\u007fb',
  'a\u0085b',
  'a\ud800b',
  'a\udc00',
  'x'.repeat(MAX_TOOL_RESULT_REF_CHARS + 1),
];

/** Storage basics: round trip, unknown refs, write-once, ref safety. */
export const basicCases: readonly ToolResultStoreContractCase[] = [
  {
    name: 'put then get returns the whole text with its length and offset 0',
    async run(makeStore) {
      const store = await makeStore();
      const ref = buildToolResultRef('s-basic', 'call-1');
      await store.put(ref, 'hello, world');
      assert.deepEqual(await store.get(ref), { content: 'hello, world', offset: 0, totalChars: 12 });
    },
  },
  {
    name: 'get and ownerOf of an unknown ref answer undefined',
    async run(makeStore) {
      const store = await makeStore();
      assert.equal(await store.get(buildToolResultRef('s-unknown', 'nope')), undefined);
      assert.equal(await store.ownerOf(buildToolResultRef('s-unknown', 'nope')), undefined);
      assert.equal(await store.get('not-minted-and-not-stored'), undefined);
    },
  },
  {
    name: 'write-once: a second put under the same ref keeps the first text',
    async run(makeStore) {
      const store = await makeStore();
      const ref = buildToolResultRef('s-once', 'call-1');
      await store.put(ref, 'first');
      await store.put(ref, 'second, and longer');
      assert.equal(await readAll(store, ref), 'first');
      assert.equal((await store.get(ref))?.totalChars, 5);
    },
  },
  {
    name: 'empty text is stored and reads back as an empty slice',
    async run(makeStore) {
      const store = await makeStore();
      const ref = buildToolResultRef('s-empty', 'call-1');
      await store.put(ref, '');
      assert.deepEqual(await store.get(ref), { content: '', offset: 0, totalChars: 0 });
      await store.put(ref, 'late');
      assert.equal(await readAll(store, ref), '');
    },
  },
  {
    name: 'retention, when declared, is none or managed',
    async run(makeStore) {
      const store = await makeStore();
      assert.ok(store.retention === undefined || store.retention === 'none' || store.retention === 'managed');
    },
  },
  {
    name: 'refs assertSafeToolResultRef rejects: put throws, get and ownerOf answer unknown',
    async run(makeStore) {
      const store = await makeStore();
      for (const ref of UNSAFE_REFS) {
        await assert.rejects(
          async () => store.put(ref, 'text', { sessionId: 's-unsafe' }),
          (error: unknown) => (error as { code?: unknown }).code === 'tool_result.unsafe_ref',
          `put accepted unsafe ref ${JSON.stringify(ref.slice(0, 20))}`,
        );
        assert.equal(await store.get(ref), undefined);
        assert.equal(await store.ownerOf(ref), undefined);
      }
    },
  },
  {
    name: 'refs minted from awkward ids and unminted safe refs round-trip',
    async run(makeStore) {
      const store = await makeStore();
      const refs = [
        buildToolResultRef('tenant/1', 'call:7', 'x'.repeat(500)),
        buildToolResultRef('{tag}', 'a\u0000b\nc', '\u00e9\ud83d\ude00'),
        buildToolResultRef('', ''),
        'plain-ref',
        'tr_looks~minted',
        'tr_{odd}~ref',
        'ref with spaces, "quotes" & <angles> %41',
      ];
      for (const [i, ref] of refs.entries()) await store.put(ref, `content ${i}`, { sessionId: `owner-${i}` });
      for (const [i, ref] of refs.entries()) {
        assert.equal(await readAll(store, ref), `content ${i}`, `ref #${i}`);
        assert.deepEqual(await store.ownerOf(ref), { sessionId: `owner-${i}` });
      }
    },
  },
];
