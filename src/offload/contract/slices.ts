/**
 * The result-store contract's slice cases: windows counted in UTF-16 code
 * units.
 */
import assert from 'node:assert/strict';
import { buildToolResultRef } from '../ref.js';
import { mixedText, seededRandom, type ToolResultStoreContractCase } from './support.js';

/** Windows are measured in UTF-16 code units, exactly as `String.prototype.slice`. */
export const sliceCases: readonly ToolResultStoreContractCase[] = [
  {
    name: 'offset and limit count UTF-16 code units across multi-byte and astral characters',
    async run(makeStore) {
      const store = await makeStore();
      const text = 'ab\u00e9\u4e2d\ud83d\ude00x\ud834\udd1e\u00df end';
      const ref = buildToolResultRef('s-slices', 'call-1');
      await store.put(ref, text);
      for (let offset = 0; offset <= text.length + 1; offset += 1) {
        for (const limit of [0, 1, 2, 3, 5, 100]) {
          const slice = await store.get(ref, { offset, limit });
          const start = Math.min(offset, text.length);
          assert.deepEqual(
            slice,
            { content: text.slice(start, start + limit), offset: start, totalChars: text.length },
            `offset ${offset} limit ${limit}`,
          );
        }
      }
    },
  },
  {
    name: 'windows anywhere in a long mixed text match String.prototype.slice',
    async run(makeStore) {
      const store = await makeStore();
      const text = mixedText(30_011);
      const ref = buildToolResultRef('s-long', 'call-1');
      await store.put(ref, text);
      const random = seededRandom(42);
      const windows: Array<[number, number]> = [
        [0, text.length],
        [text.length - 1, 10],
        [4095, 2],
        [4096, 4096],
        [8191, 3],
      ];
      for (let i = 0; i < 60; i += 1) windows.push([random(text.length), 1 + random(9000)]);
      for (const [offset, limit] of windows) {
        const slice = await store.get(ref, { offset, limit });
        assert.ok(slice, 'stored text must be found');
        assert.equal(slice.totalChars, text.length);
        assert.equal(slice.offset, offset);
        assert.equal(slice.content, text.slice(offset, offset + limit), `offset ${offset} limit ${limit}`);
      }
      assert.equal((await store.get(ref))?.content, text);
    },
  },
  {
    name: 'out-of-range and malformed windows are clamped, never thrown',
    async run(makeStore) {
      const store = await makeStore();
      const ref = buildToolResultRef('s-clamp', 'call-1');
      await store.put(ref, '0123456789');
      const cases: Array<[{ offset?: number; limit?: number }, string, number]> = [
        [{ offset: 50 }, '', 10],
        [{ offset: -5, limit: 3 }, '012', 0],
        [{ limit: 0 }, '', 0],
        [{ limit: -1 }, '', 0],
        [{ offset: Number.NaN, limit: Number.POSITIVE_INFINITY }, '0123456789', 0],
        [{ offset: 2.9, limit: 3.9 }, '234', 2],
        [{ offset: 8, limit: 50 }, '89', 8],
      ];
      for (const [options, content, offset] of cases) {
        assert.deepEqual(await store.get(ref, options), { content, offset, totalChars: 10 }, JSON.stringify(options));
      }
    },
  },
];
