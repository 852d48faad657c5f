/**
 * The run page of a long run: one page of receipts at a time, read from a
 * slice of the run index, with links to the next and previous pages, and the
 * resume note left to the CLI since a page cannot build it.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { startConsoleServer, type ConsoleServer } from '../../src/console/index.js';
import { RUN_PAGE_SIZE } from '../../src/console/pages/run.js';
import { claimFence, freshKey, runIndexEntryOf, useRedis, waitUntil } from '../support/redis-fixture.js';

const fixture = useRedis();
const servers: ConsoleServer[] = [];
afterAll(async () => {
  await Promise.all(servers.map((s) => s.close()));
});

/** The receipt keys a run page links to, in the order of its table. */
const rowKeys = (body: string) =>
  [...body.matchAll(/<td><a href="\/receipt\?key=([^"]+)">open<\/a><\/td>/g)].map((m) =>
    decodeURIComponent(m[1]!.replaceAll('&amp;', '&')),
  );
const linkOf = (body: string, rel: 'next' | 'prev') =>
  body.match(new RegExp(`<a href="([^"]+)" rel="${rel}">`))?.[1]?.replaceAll('&amp;', '&');

describe('the run page of a run longer than a page', () => {
  it('shows the first page with the count and a next link that leads to the rest, and no resume note', async () => {
    const store = fixture.store();
    const base = freshKey({ tenantId: 'acme <&>', runId: 'run "long"' });
    const count = RUN_PAGE_SIZE + 5;
    for (let start = 0; start < count; start += 50) {
      await Promise.all(
        Array.from({ length: Math.min(50, count - start) }, (_, j) =>
          store.claim({ ...base, toolName: `tool-${String(start + j).padStart(3, '0')}`, argsHash: `h${start + j}` }, { effect: 'opaque' }),
        ),
      );
    }
    const all = (await store.listRun(base.tenantId, base.runId)).map((r) => r.redisKey);
    expect(all).toHaveLength(count);

    const server = await startConsoleServer({ redis: fixture.connect(), prefix: store.prefix, port: 0 });
    servers.push(server);
    const first = await fetch(`${server.url}run?tenant=${encodeURIComponent(base.tenantId)}&run=${encodeURIComponent(base.runId)}`);
    const firstBody = await first.text();
    expect(first.status).toBe(200);
    expect(firstBody).toContain(`showing 1\u2013${RUN_PAGE_SIZE} of ${count} receipts`);
    expect(firstBody).toContain('acme &lt;&amp;&gt;');
    expect(firstBody).not.toContain('acme <&>');
    expect(rowKeys(firstBody)).toEqual(all.slice(0, RUN_PAGE_SIZE));
    expect(linkOf(firstBody, 'prev')).toBeUndefined();
    expect(firstBody).not.toContain('id="resume-note"');
    expect(firstBody).toContain(`tool-receipts run acme &lt;&amp;&gt; run &quot;long&quot;`);

    const next = linkOf(firstBody, 'next');
    expect(next).toBeDefined();
    const second = await fetch(new URL(next!, server.url));
    const secondBody = await second.text();
    expect(second.status).toBe(200);
    expect(secondBody).toContain(`showing ${RUN_PAGE_SIZE + 1}\u2013${count} of ${count} receipts`);
    expect(rowKeys(secondBody)).toEqual(all.slice(RUN_PAGE_SIZE));
    expect(linkOf(secondBody, 'next')).toBeUndefined();
    // Back to the first page, which names no offset.
    const prev = new URL(linkOf(secondBody, 'prev')!, server.url);
    expect(prev.searchParams.get('from')).toBeNull();
    expect(prev.searchParams.get('tenant')).toBe(base.tenantId);
    expect(prev.searchParams.get('run')).toBe(base.runId);

    for (const bad of ['-1', 'abc', '1e3', '99999999999']) {
      const res = await fetch(`${server.url}run?tenant=acme&run=r&from=${encodeURIComponent(bad)}`);
      expect(res.status, bad).toBe(400);
      await res.text();
    }
  });

  it('reads only its slice of the run index, pruning the expired entries it meets and counting them out', async () => {
    const keeper = fixture.store({ retentionMs: 60_000 });
    const short = fixture.store({ retentionMs: 200 });
    const redis = fixture.connect();
    const base = freshKey();
    const keys = ['a', 'b', 'c'].map((toolName) => ({ ...base, toolName }));
    for (const key of keys) {
      await keeper.claim(key, { effect: 'opaque' });
      await waitUntil(
        () => keeper.inspect(key),
        (r) => r !== null && r.readAtMs > r.createdMs,
      );
    }
    const gone = { ...base, toolName: 'z-gone' };
    await short.complete(gone, await claimFence(keeper, gone, { effect: 'opaque' }), 'x');
    await waitUntil(
      () => keeper.inspect(gone),
      (r) => r === null,
      10_000,
      'expiry',
    );
    const index = keeper.runIndexKey(base.tenantId, base.runId);

    const page1 = await keeper.listRunPage(base.tenantId, base.runId, { offset: 0, limit: 2 });
    expect(page1.receipts.map((r) => r.key.toolName)).toEqual(['a', 'b']);
    expect(page1.total).toBe(4); // the expired entry lies beyond this page: not read, still counted
    expect(await redis.zcard(index)).toBe(4);

    const page2 = await keeper.listRunPage(base.tenantId, base.runId, { offset: 2, limit: 2 });
    expect(page2.receipts.map((r) => r.key.toolName)).toEqual(['c']);
    expect(page2.total).toBe(3);
    expect(await redis.zrange(index, 0, -1)).toEqual(await Promise.all(keys.map((k) => runIndexEntryOf(redis, keeper, k))));
    // The default listing is unchanged: the whole run.
    expect((await keeper.listRun(base.tenantId, base.runId)).map((r) => r.key.toolName)).toEqual(['a', 'b', 'c']);
    expect((await keeper.listRun(base.tenantId, base.runId, { offset: 1, limit: 5 })).map((r) => r.key.toolName)).toEqual(['b', 'c']);
  });
});
