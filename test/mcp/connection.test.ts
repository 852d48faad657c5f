/**
 * McpConnection: one client per server per process, reconnecting after the
 * server went away, against the fixture server over stdio.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { ToolJobResult } from '../../src/bullmq/index.js';
import { McpConnectError, McpConnection, mcpTools } from '../../src/mcp/index.js';
import { call, jobData, useLanes } from '../bullmq/fixture.js';
import { waitUntil } from '../support/redis-fixture.js';
import { journalPath, readJournal, stdioClient } from './support.js';

const lane = useLanes();

describe('McpConnection', () => {
  const opened: McpConnection[] = [];
  afterEach(async () => {
    for (const c of opened.splice(0)) await c.close().catch(() => undefined);
  });
  const connection = (connect: ConstructorParameters<typeof McpConnection>[0]) => {
    const c = new McpConnection(connect);
    opened.push(c);
    return c;
  };

  it('connects once for concurrent users, and again after the server exits', async () => {
    const journal = journalPath();
    let connects = 0;
    const mcp = connection(async () => {
      connects++;
      return stdioClient(journal);
    });
    const [a, b] = await Promise.all([mcp.client(), mcp.client()]);
    expect(a).toBe(b);
    expect(connects).toBe(1);
    const pid = (a.transport as { pid?: number | null }).pid!;
    process.kill(pid, 'SIGKILL');
    await waitUntil(async () => (await mcp.client()) !== a, (changed) => changed, 20_000, 'a new client');
    expect(connects).toBe(2);

    const l = await lane();
    l.worker({ tools: await mcpTools(mcp, { include: ['op_default'] }) });
    const job = await l.run(jobData([call('op_default', { to: 'j@example.com' })]));
    expect((job.returnvalue as ToolJobResult).results[0]).toMatchObject({ outcome: 'executed' });
    expect(new Set(readJournal(journal).map((e) => e.pid)).has(pid)).toBe(false);
  });

  it('a call that cannot connect never started: the job retries it, and it runs once the server can be reached', async () => {
    const journal = journalPath();
    let refuse = false;
    const mcp = connection(async () => {
      if (refuse) throw new Error('spawn refused');
      return stdioClient(journal);
    });
    const tools = await mcpTools(mcp, { include: ['op_default'] });
    const first = await mcp.client();
    refuse = true;
    await first.close();
    await expect(mcp.client()).rejects.toBeInstanceOf(McpConnectError);

    const l = await lane();
    l.worker({ tools });
    const data = jobData([call('op_default', { to: 'k@example.com' })]);
    const job = await l.add(data, { attempts: 10, backoff: { type: 'fixed', delay: 500 } });
    await waitUntil(async () => (await l.queue.getJob(job.id!))?.attemptsMade ?? 0, (n) => n >= 1, 20_000, 'a failed attempt');
    expect(await l.receipt(data.tenantId, data.runId)).toMatchObject({ status: 'failed', tier: 'neverStarted' });
    refuse = false;
    const done = await l.settle(job, 30_000);
    expect((done.returnvalue as ToolJobResult).results[0]).toMatchObject({ outcome: 'executed', content: 'sent to k@example.com' });
    expect(readJournal(journal).filter((e) => e.tool === 'op_default').map((e) => e.phase)).toEqual(['received', 'sent']);
  });

  it('after close, no client is handed out', async () => {
    const mcp = connection(() => stdioClient(journalPath()));
    await mcp.client();
    await mcp.close();
    await expect(mcp.client()).rejects.toThrow(/closed/);
    expect(() => new McpConnection('nope' as never)).toThrow(McpConnectError);
  });
});
