/**
 * McpConnection: one client per server per process, reconnecting after the
 * server went away, against the fixture server over stdio.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { ToolJobResult } from '../../src/bullmq/index.js';
import {
  DEFAULT_MCP_MAX_RECONNECT_DELAY_MS,
  DEFAULT_MCP_RECONNECT_DELAY_MS,
  InvalidMcpToolsOptionsError,
  McpConnectError,
  McpConnection,
  mcpTools,
} from '../../src/mcp/index.js';
import { call, jobData, useLanes } from '../bullmq/fixture.js';
import { waitUntil } from '../support/redis-fixture.js';
import { journalPath, ODD_SERVER_SCRIPT, readJournal, stdioClient } from './support.js';

const lane = useLanes();

describe('McpConnection', () => {
  const opened: McpConnection[] = [];
  afterEach(async () => {
    for (const c of opened.splice(0)) await c.close().catch(() => undefined);
  });
  const connection = (
    connect: ConstructorParameters<typeof McpConnection>[0],
    options?: ConstructorParameters<typeof McpConnection>[1],
  ) => {
    const c = new McpConnection(connect, options);
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
    await waitUntil(
      async () => (await mcp.client()) !== a,
      (changed) => changed,
      20_000,
      'a new client',
    );
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
    await waitUntil(
      async () => (await l.queue.getJob(job.id!))?.attemptsMade ?? 0,
      (n) => n >= 1,
      20_000,
      'a failed attempt',
    );
    expect(await l.receipt(data.tenantId, data.runId)).toMatchObject({ status: 'failed', tier: 'neverStarted' });
    refuse = false;
    const done = await l.settle(job, 30_000);
    expect((done.returnvalue as ToolJobResult).results[0]).toMatchObject({ outcome: 'executed', content: 'sent to k@example.com' });
    expect(
      readJournal(journal)
        .filter((e) => e.tool === 'op_default')
        .map((e) => e.phase),
    ).toEqual(['received', 'sent']);
  });

  it('after close, no client is handed out', async () => {
    const mcp = connection(() => stdioClient(journalPath()));
    await mcp.client();
    await mcp.close();
    await expect(mcp.client()).rejects.toThrow(/closed/);
    expect(() => new McpConnection('nope' as never)).toThrow(McpConnectError);
  });

  it('a connect that failed is tried again no sooner than the backoff allows, the wait doubling; uses meanwhile fail at once', async () => {
    let connects = 0;
    const mcp = connection(
      async () => {
        connects++;
        throw new Error('spawn refused');
      },
      { reconnectDelayMs: 1_000, maxReconnectDelayMs: 4_000 },
    );
    await expect(mcp.client()).rejects.toThrow(/could not connect to the MCP server: spawn refused/);
    expect(connects).toBe(1);
    // Within the first second: refused without trying.
    await expect(mcp.client()).rejects.toThrow(/1 connect\(s\) failed in a row, the last: spawn refused\); the next try is in \d+ ms/);
    expect(connects).toBe(1);
    await waitUntil(
      async () => (await mcp.client().catch(() => undefined), connects),
      (n) => n === 2,
      10_000,
      'a second connect',
    );
    // The second failure doubles the wait to 2 s: half of it later, still refused without trying.
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    await expect(mcp.client()).rejects.toThrow(/2 connect\(s\) failed in a row/);
    expect(connects).toBe(2);
    await waitUntil(
      async () => (await mcp.client().catch(() => undefined), connects),
      (n) => n === 3,
      10_000,
      'a third connect',
    );
  });

  it('a connect that succeeds ends the backoff; close() does not wait for a connect under way', async () => {
    let fail = true;
    let connects = 0;
    const pids: number[] = [];
    const mcp = connection(
      async () => {
        connects++;
        if (fail) throw new Error('not yet');
        return stdioClient(journalPath(), { script: ODD_SERVER_SCRIPT, env: { MCP_HANG: 'initialize' }, onSpawn: (pid) => pids.push(pid) });
      },
      { reconnectDelayMs: 0 },
    );
    await expect(mcp.client()).rejects.toThrow(/not yet/);
    fail = false;
    const pending = mcp.client();
    await waitUntil(
      () => Promise.resolve(pids.length),
      (n) => n === 1,
      20_000,
      'the server to be spawned',
    );
    const started = performance.now();
    await mcp.close();
    expect(performance.now() - started).toBeLessThan(5_000);
    for (const pid of pids) process.kill(pid, 'SIGKILL');
    await expect(pending).rejects.toThrow(McpConnectError);
    expect(connects).toBe(2);
  });

  it('its options are checked: whole numbers of ms, the longest wait no shorter than the first, no unknown name', () => {
    expect([DEFAULT_MCP_RECONNECT_DELAY_MS, DEFAULT_MCP_MAX_RECONNECT_DELAY_MS]).toEqual([250, 10_000]);
    const connect = () => stdioClient(journalPath());
    for (const bad of [
      { reconnectDelayMs: -1 },
      { reconnectDelayMs: 1.5 },
      { maxReconnectDelayMs: Number.POSITIVE_INFINITY },
      { reconnectDelay: 5 },
      { reconnectDelayMs: 500, maxReconnectDelayMs: 100 },
    ]) {
      expect(() => new McpConnection(connect, bad as never), JSON.stringify(bad)).toThrow(InvalidMcpToolsOptionsError);
    }
    expect(() => new McpConnection(connect, { reconnectDelay: 5 } as never)).toThrow(/did you mean `reconnectDelayMs`/);
    expect(() => new McpConnection(connect, { reconnectDelayMs: 20_000 })).not.toThrow();
  });
});
