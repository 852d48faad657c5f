import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { OFFLOAD_TOOL_NAME, RedisToolResultStore } from '../../src/offload/index.js';
import { defineTool, type ToolJobResult } from '../../src/bullmq/index.js';
import { call, jobData, useLanes } from './fixture.js';

const lane = useLanes();

/** A deterministic ~5 MB text with multi-byte and astral characters mixed in. */
function bigText(): string {
  const line = (i: number) => `${String(i).padStart(6, '0')} drwxr-xr-x  café/日本語/🙂 file-${i}.txt\n`;
  const parts: string[] = [];
  let size = 0;
  for (let i = 0; size < 5_000_000; i++) {
    const l = line(i);
    parts.push(l);
    size += l.length;
  }
  return parts.join('');
}

describe('offloading large results through the wrapper', () => {
  it('keeps a 5 MB result out of the job and the receipt, and pages it back exactly', async () => {
    const l = await lane();
    const text = bigText();
    const listFiles = defineTool({
      name: 'list_files',
      input: z.object({ path: z.string() }),
      // Not read-only: this test wants the receipt, and the replay it gives.
      effect: 'opaque',
      destructive: false,
      execute: () => text,
    });
    const resultStore = new RedisToolResultStore({ redis: l.redis, prefix: l.prefix });
    l.worker({ tools: [listFiles], resultStore });
    const ids = { tenantId: 'acme', runId: 'run-big' };
    const data = { ...jobData([call('list_files', { path: '/' }, 'toolu_ls')], ids), sessionId: 'sess-1' };
    const job = await l.run(data);
    const result = job.returnvalue as ToolJobResult;
    expect(JSON.stringify(result).length).toBeLessThan(25_000);
    const preview = result.results[0]!.content;
    expect(preview.startsWith('<persisted-output ref="')).toBe(true);
    const ref = /ref="([^"]+)"/.exec(preview)![1]!;

    const [receipt] = await l.store.listRun('acme', 'run-big');
    expect(receipt!.status).toBe('completed');
    expect(await l.redis.memory('USAGE', receipt!.redisKey)).toBeLessThan(25_000);

    // Page it back through the wrapper's own ReadToolResult tool, in one job of page reads.
    const pages = Math.ceil(text.length / 20_000);
    const reads = Array.from({ length: pages }, (_, i) =>
      call(OFFLOAD_TOOL_NAME, { ref, offset: i * 20_000, limit: 20_000 }, `toolu_read_${i}`),
    );
    const readJob = await l.run({ ...jobData(reads, ids), sessionId: 'sess-1' });
    const answers = (readJob.returnvalue as ToolJobResult).results.map((r) => r.content);
    const body = answers.map((a) => a.slice(a.indexOf('\n') + 1, a.lastIndexOf('\n'))).join('');
    expect(body.length).toBe(text.length);
    expect(body === text).toBe(true);
    // A page-back read is never offloaded again.
    expect(answers.every((a) => !a.startsWith('<persisted-output'))).toBe(true);

    // A replay returns the same preview, byte for byte.
    const again = await l.run({ ...data, calls: [call('list_files', { path: '/' }, 'toolu_ls_retry')] });
    const replayed = (again.returnvalue as ToolJobResult).results[0]!;
    expect(replayed.outcome).toBe('replayed');
    expect(replayed.content).toBe(preview);
  });

  it('pages back within a maxResultChars smaller than a page: each answer fits, its footer names the next offset', async () => {
    const l = await lane();
    const text = 'abcdefghij'.repeat(3_300);
    const report = defineTool({ name: 'report', input: z.object({}), effect: 'opaque', destructive: false, execute: () => text });
    const resultStore = new RedisToolResultStore({ redis: l.redis, prefix: l.prefix });
    l.worker({ tools: [report], resultStore, maxResultChars: 10_000 });
    const ids = { tenantId: 'acme', runId: 'run-small-cap' };
    const job = await l.run({ ...jobData([call('report', {}, 'toolu_report')], ids), sessionId: 'sess-cap' });
    const ref = /ref="([^"]+)"/.exec((job.returnvalue as ToolJobResult).results[0]!.content)![1]!;
    let offset = 0;
    let body = '';
    for (let page = 0; page < 10; page++) {
      const read = await l.run({
        ...jobData([call(OFFLOAD_TOOL_NAME, { ref, offset }, `toolu_page_${page}`)], ids),
        sessionId: 'sess-cap',
      });
      const answer = (read.returnvalue as ToolJobResult).results[0]!.content;
      expect(answer.length).toBeLessThanOrEqual(10_000);
      expect(answer).not.toContain('was not kept');
      const lines = answer.split('\n');
      body += lines[1];
      const next = /with offset (\d+) for the next page/.exec(lines[2]!);
      if (next === null) break;
      offset = Number(next[1]);
    }
    expect(body).toBe(text);
  });

  it('without a store, cuts results over the cap and says the rest was not kept', async () => {
    const l = await lane();
    const big = defineTool({ name: 'dump', input: z.object({}), effect: 'opaque', destructive: false, execute: () => 'x'.repeat(50_000) });
    l.worker({ tools: [big], maxResultChars: 10_000 });
    const job = await l.run(jobData([call('dump', {})]));
    const content = (job.returnvalue as ToolJobResult).results[0]!.content;
    expect(content.length).toBeLessThanOrEqual(10_000);
    expect(content).toMatch(/not kept/);
  });

  it('registers the page-back tool only when a store is configured, and answers honestly for an unknown ref', async () => {
    const l = await lane();
    const noop = defineTool({ name: 'noop', input: z.object({}), effect: 'opaque', destructive: false, execute: () => 'ok' });
    l.worker({ tools: [noop], resultStore: new RedisToolResultStore({ redis: l.redis, prefix: l.prefix }) });
    const job = await l.run(jobData([call(OFFLOAD_TOOL_NAME, { ref: 'tr_nobody~nothing' })]));
    const [r] = (job.returnvalue as ToolJobResult).results;
    expect(r).toMatchObject({ outcome: 'rejected', is_error: true });
    expect(r!.content).toMatch(/^Nothing is stored under ref/);

    const l2 = await lane();
    l2.worker({ tools: [noop] });
    const job2 = await l2.run(jobData([call(OFFLOAD_TOOL_NAME, { ref: 'tr_nobody~nothing' })]));
    expect((job2.returnvalue as ToolJobResult).results[0]!.outcome).toBe('rejected');
  });
});
