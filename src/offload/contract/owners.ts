/**
 * The result-store contract's owner cases: re-puts, conflicts, no adoption of
 * another owner's ref.
 */
import assert from 'node:assert/strict';
import { buildToolResultRef } from '../ref.js';
import { assertRefConflict, readAll, type ToolResultStoreContractCase } from './support.js';

/** Owner rules: idempotent re-puts, conflicts, no adoption, election with content. */
export const ownerCases: readonly ToolResultStoreContractCase[] = [
  {
    name: 'a re-put by the same owner is a no-op',
    async run(makeStore) {
      const store = await makeStore();
      const ref = buildToolResultRef('s-same', 'call-1');
      const owner = { sessionId: 's-same', taskId: 'task-1' };
      await store.put(ref, 'kept', owner);
      await store.put(ref, 'ignored', { ...owner });
      assert.equal(await readAll(store, ref), 'kept');
      assert.deepEqual(await store.ownerOf(ref), owner);
    },
  },
  {
    name: 'a re-put without an owner is a no-op that keeps the stored owner',
    async run(makeStore) {
      const store = await makeStore();
      const ref = buildToolResultRef('s-keep', 'call-1');
      await store.put(ref, 'kept', { sessionId: 's-keep' });
      await store.put(ref, 'ignored');
      assert.equal(await readAll(store, ref), 'kept');
      assert.deepEqual(await store.ownerOf(ref), { sessionId: 's-keep' });
    },
  },
  {
    name: 'a re-put stating a different owner throws tool_result.ref_conflict and changes nothing',
    async run(makeStore) {
      const store = await makeStore();
      const ref = buildToolResultRef('s-a', 'call-1');
      const stored = { sessionId: 's-a', taskId: 't-1' };
      await store.put(ref, 'owned by a', stored);
      for (const incoming of [{ sessionId: 's-b' }, { sessionId: 's-a', taskId: 't-2' }, { sessionId: 's-a' }]) {
        await assertRefConflict(() => store.put(ref, 'other text', incoming), ref, stored, incoming);
        await assertRefConflict(() => store.put(ref, 'owned by a', incoming), ref, stored, incoming);
      }
      assert.equal(await readAll(store, ref), 'owned by a');
      assert.deepEqual(await store.ownerOf(ref), stored);
    },
  },
  {
    name: 'a stored owner without taskId conflicts with one that states a taskId',
    async run(makeStore) {
      const store = await makeStore();
      const ref = buildToolResultRef('s-narrow', 'call-1');
      await store.put(ref, 'text', { sessionId: 's-narrow' });
      const incoming = { sessionId: 's-narrow', taskId: 't-1' };
      await assertRefConflict(() => store.put(ref, 'text', incoming), ref, { sessionId: 's-narrow' }, incoming);
    },
  },
  {
    name: 'an entry stored without an owner is never adopted',
    async run(makeStore) {
      const store = await makeStore();
      const ref = buildToolResultRef('s-unowned', 'call-1');
      await store.put(ref, 'nobody owns this');
      await store.put(ref, 'claim', { sessionId: 's-unowned' });
      await store.put(ref, 'claim again', { sessionId: 'someone-else' });
      assert.equal(await store.ownerOf(ref), undefined);
      assert.equal(await readAll(store, ref), 'nobody owns this');
    },
  },
  {
    name: 'ownerOf: undefined for unknown and unowned, the stored owner otherwise',
    async run(makeStore) {
      const store = await makeStore();
      const owned = buildToolResultRef('s-owner', 'owned');
      const narrowed = buildToolResultRef('s-owner', 'narrowed');
      const unowned = buildToolResultRef('s-owner', 'unowned');
      await store.put(owned, 'x', { sessionId: 's-owner', taskId: undefined });
      await store.put(narrowed, 'y', { sessionId: 's-owner', taskId: 't-9' });
      await store.put(unowned, 'z');
      assert.deepEqual(await store.ownerOf(owned), { sessionId: 's-owner' });
      assert.deepEqual(await store.ownerOf(narrowed), { sessionId: 's-owner', taskId: 't-9' });
      assert.equal(await store.ownerOf(unowned), undefined);
      assert.equal(await store.ownerOf(buildToolResultRef('s-owner', 'missing')), undefined);
    },
  },
  {
    name: 'racing puts elect one writer, whose text and owner are both stored',
    async run(makeStore) {
      const store = await makeStore();
      const ref = buildToolResultRef('s-race', 'call-1');
      const writers = Array.from({ length: 12 }, (_, i) => ({ sessionId: `racer-${i}`, text: `text of racer ${i}` }));
      const outcomes = await Promise.allSettled(writers.map(async (w) => store.put(ref, w.text, { sessionId: w.sessionId })));
      const winners = outcomes.flatMap((o, i) => (o.status === 'fulfilled' ? [writers[i]!] : []));
      assert.equal(winners.length, 1, 'exactly one racing put may succeed');
      for (const o of outcomes) {
        if (o.status === 'rejected') assert.equal((o.reason as { code?: unknown }).code, 'tool_result.ref_conflict');
      }
      const winner = winners[0]!;
      assert.deepEqual(await store.ownerOf(ref), { sessionId: winner.sessionId });
      assert.equal(await readAll(store, ref), winner.text);
    },
  },
  {
    name: 'sessions whose ids a naive ref would fold together never read each other',
    async run(makeStore) {
      const store = await makeStore();
      const sessions = ['team/blue', 'team:blue', 'team_blue', 'team blue', 'team\u0000blue', 'team.blue', 'team~blue', 'team%2Fblue'];
      const refs = sessions.map((s) => buildToolResultRef(s, 'call-1'));
      assert.equal(new Set(refs).size, sessions.length, 'minted refs must differ');
      for (const [i, s] of sessions.entries()) await store.put(refs[i]!, `secret of ${JSON.stringify(s)}`, { sessionId: s });
      for (const [i, s] of sessions.entries()) {
        assert.equal(await readAll(store, refs[i]!), `secret of ${JSON.stringify(s)}`);
        assert.deepEqual(await store.ownerOf(refs[i]!), { sessionId: s });
      }
    },
  },
];
