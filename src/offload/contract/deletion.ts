/**
 * The result-store contract's cases for deleting a session's results.
 */
import assert from 'node:assert/strict';
import { buildToolResultRef } from '../ref.js';
import type { ToolResultStore } from '../types.js';
import { readAll, type ToolResultStoreContractCase } from './support.js';

type Deleting = ToolResultStore & Required<Pick<ToolResultStore, 'deleteBySession'>>;

function deletion(name: string, body: (store: Deleting) => Promise<void>): ToolResultStoreContractCase {
  return {
    name,
    optional: true,
    async run(makeStore) {
      const store = await makeStore();
      if (typeof store.deleteBySession !== 'function') return 'skipped';
      await body(store as Deleting);
    },
  };
}

/** `deleteBySession`: selection by recorded owner, counts, idempotence, concurrency. */
export const deletionCases: readonly ToolResultStoreContractCase[] = [
  deletion('deleteBySession on an empty store reports nothing deleted and nothing unattributable', async (store) => {
    assert.deepEqual(await store.deleteBySession('nobody'), { deleted: 0, unattributable: 0 });
  }),
  deletion('deleteBySession removes the session entries, any taskId, and keeps and counts unowned ones', async (store) => {
    const a1 = buildToolResultRef('s-del-a', 'c1');
    const a2 = buildToolResultRef('s-del-a', 'c2');
    const b1 = buildToolResultRef('s-del-b', 'c1');
    const loose1 = buildToolResultRef('s-del-a', 'loose');
    const loose2 = 'hand-made-ref';
    await store.put(a1, 'a1', { sessionId: 's-del-a' });
    await store.put(a2, 'a2', { sessionId: 's-del-a', taskId: 'task-7' });
    await store.put(b1, 'b1', { sessionId: 's-del-b' });
    await store.put(loose1, 'loose 1');
    await store.put(loose2, 'loose 2');
    assert.deepEqual(await store.deleteBySession('s-del-a'), { deleted: 2, unattributable: 2 });
    assert.equal(await store.get(a1), undefined);
    assert.equal(await store.get(a2), undefined);
    assert.equal(await store.ownerOf(a1), undefined);
    assert.equal(await readAll(store, b1), 'b1');
    assert.equal(await readAll(store, loose1), 'loose 1');
    assert.equal(await readAll(store, loose2), 'loose 2');
  }),
  deletion('deleteBySession selects by the recorded owner, never by what the ref says', async (store) => {
    const mintedForB = buildToolResultRef('s-ref-b', 'c1');
    const mintedForA = buildToolResultRef('s-ref-a', 'c1');
    const unminted = 'custom-ref-owned-by-a';
    await store.put(mintedForB, 'owned by a', { sessionId: 's-ref-a' });
    await store.put(mintedForA, 'owned by b', { sessionId: 's-ref-b' });
    await store.put(unminted, 'also owned by a', { sessionId: 's-ref-a' });
    assert.deepEqual(await store.deleteBySession('s-ref-a'), { deleted: 2, unattributable: 0 });
    assert.equal(await store.get(mintedForB), undefined);
    assert.equal(await store.get(unminted), undefined);
    assert.equal(await readAll(store, mintedForA), 'owned by b');
    assert.deepEqual(await store.deleteBySession('s-ref-b'), { deleted: 1, unattributable: 0 });
    assert.equal(await store.get(mintedForA), undefined);
  }),
  deletion('deleteBySession does not reach neighbouring sessions whose ids share a prefix', async (store) => {
    const sessions = ['team', 'team_blue', 'team/blue', 'tea'];
    for (const s of sessions) await store.put(buildToolResultRef(s, 'blue_x'), s, { sessionId: s });
    assert.deepEqual(await store.deleteBySession('team'), { deleted: 1, unattributable: 0 });
    for (const s of sessions.slice(1)) assert.equal(await readAll(store, buildToolResultRef(s, 'blue_x')), s);
  }),
  deletion('deleteBySession is idempotent and a deleted ref can be written afresh', async (store) => {
    const ref = buildToolResultRef('s-again', 'c1');
    await store.put(ref, 'first life', { sessionId: 's-again' });
    await store.put('unowned-ref', 'x');
    assert.deepEqual(await store.deleteBySession('s-again'), { deleted: 1, unattributable: 1 });
    assert.deepEqual(await store.deleteBySession('s-again'), { deleted: 0, unattributable: 1 });
    await store.put(ref, 'second life', { sessionId: 's-other' });
    assert.equal(await readAll(store, ref), 'second life');
    assert.deepEqual(await store.ownerOf(ref), { sessionId: 's-other' });
  }),
  deletion('concurrent deletes of one session remove each entry exactly once', async (store) => {
    const refs = Array.from({ length: 40 }, (_, i) => buildToolResultRef('s-conc', `c${i}`));
    for (const ref of refs) await store.put(ref, `text ${ref}`, { sessionId: 's-conc' });
    await store.put(buildToolResultRef('s-keep', 'c1'), 'kept', { sessionId: 's-keep' });
    const reports = await Promise.all([1, 2, 3].map(async () => store.deleteBySession('s-conc')));
    assert.equal(
      reports.reduce((sum, r) => sum + r.deleted, 0),
      refs.length,
    );
    for (const r of reports) assert.equal(r.unattributable, 0);
    for (const ref of refs) assert.equal(await store.get(ref), undefined);
    assert.equal(await readAll(store, buildToolResultRef('s-keep', 'c1')), 'kept');
  }),
];
