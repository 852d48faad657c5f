/**
 * A stateful Streamable HTTP MCP server (the SDK's transport with a
 * sessionIdGenerator, in its own process) is SIGKILLed mid-run and started
 * again on the same port: it answers 404 "Session not found" to the old
 * Mcp-Session-Id, and the connection starts a new session. Real Worker,
 * Redis and server; the server's journal counts every call it received.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterEach, describe, expect, it } from 'vitest';
import { breakerField } from '../../src/redis/keys.js';
import type { ToolJobResult } from '../../src/bullmq/index.js';
import { McpConnection, mcpTools } from '../../src/mcp/index.js';
import { call, jobData, useLanes } from '../bullmq/fixture.js';
import { waitUntil } from '../support/redis-fixture.js';
import { httpClient, journaled, journalPath, readJournal, startHttpServer, type HttpServer } from './support.js';

const lane = useLanes();
const results = (job: { returnvalue: unknown }) => (job.returnvalue as ToolJobResult).results;

describe('a stateful Streamable HTTP server restarted on the same URL', () => {
  const cleanups: Array<() => Promise<unknown>> = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => undefined);
  });

  it('later calls reach the new server on a new session; nothing counts on the breaker while it was unreachable; no opaque call runs twice', async () => {
    const journal = journalPath();
    let server: HttpServer = await startHttpServer(journal, 0, 'http-session');
    cleanups.push(() => server.kill());
    let connects = 0;
    const connection = new McpConnection(async () => (connects++, httpClient(server.url)), {
      reconnectDelayMs: 100,
      maxReconnectDelayMs: 1_000,
    });
    cleanups.push(() => connection.close());
    const tools = await mcpTools(connection, { include: ['op_default', 'op_nondestructive'], timeoutMs: 30_000 });
    const l = await lane();
    const { processor } = l.worker({ tools, onAmbiguous: 'report' }, { concurrency: 4 });
    const failuresOf = (data: { tenantId: string; runId: string }, tool: string) =>
      l.redis.hget(processor.breaker.redisKey(data.tenantId, data.runId), breakerField(tool, 'failures'));

    const before = await l.run(jobData([call('op_default', { to: 'before@example.com' })]));
    expect(results(before)).toMatchObject([{ outcome: 'executed', content: 'sent to before@example.com' }]);
    const firstPid = server.child.pid;

    // One call is in flight on the old session when the server dies: it may have run there.
    const heldData = jobData([call('op_nondestructive', { to: 'held@example.com', holdMs: 60_000 }, 'toolu_held')]);
    const held = await l.add(heldData, { attempts: 10, backoff: { type: 'fixed', delay: 200 } });
    await journaled(journal, (e) => e.phase === 'received' && e.args?.to === 'held@example.com');
    await server.kill();

    // While it is down, a call's attempts never reach it: more of them than the breaker's limit (5).
    const downData = jobData([call('op_default', { to: 'down@example.com' }, 'toolu_down')]);
    const down = await l.add(downData, { attempts: 30, backoff: { type: 'fixed', delay: 200 } });
    await waitUntil(
      async () => (await l.queue.getJob(down.id!))?.attemptsMade ?? 0,
      (n) => n >= 7,
      30_000,
      'seven attempts while the server is down',
    );
    expect(await l.receipt(downData.tenantId, downData.runId)).toMatchObject({ status: 'failed', tier: 'neverStarted' });
    expect(await failuresOf(downData, 'op_default')).toBeNull();

    server = await startHttpServer(journal, server.port, 'http-session');
    const downDone = await l.settle(down, 30_000);
    expect(results(downDone)).toMatchObject([{ tool_use_id: 'toolu_down', outcome: 'executed', content: 'sent to down@example.com' }]);
    expect(await failuresOf(downData, 'op_default')).toBeNull();

    // Later calls, side by side, all reach the new server.
    const after = await Promise.all(
      ['a', 'b', 'c', 'd'].map((n) =>
        l.run(jobData([call(n === 'd' ? 'op_nondestructive' : 'op_default', { to: `after-${n}@example.com` })])),
      ),
    );
    for (const [i, job] of after.entries()) {
      expect(results(job)).toMatchObject([{ outcome: 'executed', content: `sent to after-${'abcd'[i]}@example.com` }]);
    }

    // The held call may have run on the old server: it is ambiguous (the old client was closed), not sent again.
    const heldDone = await l.settle(held, 60_000);
    expect(results(heldDone)).toMatchObject([{ tool_use_id: 'toolu_held', outcome: 'ambiguous', is_error: true }]);
    expect(await failuresOf(heldData, 'op_nondestructive')).toBeNull();

    const entries = readJournal(journal);
    const received = new Map<string, number>();
    for (const e of entries.filter((e) => e.phase === 'received')) received.set(e.key!, (received.get(e.key!) ?? 0) + 1);
    expect([...received.values()].every((n) => n === 1)).toBe(true);
    expect(
      entries
        .filter((e) => e.phase === 'received')
        .map((e) => e.args?.to)
        .sort(),
    ).toEqual(['after-a', 'after-b', 'after-c', 'after-d', 'before', 'down', 'held'].map((n) => `${n}@example.com`));
    const secondPid = server.child.pid;
    expect(entries.filter((e) => String(e.args?.to).startsWith('after-')).every((e) => e.pid === secondPid)).toBe(true);
    expect(entries.find((e) => e.args?.to === 'held@example.com')!.pid).toBe(firstPid);
    // One session on each server: the first connect, and one more after the 404.
    expect(connects).toBe(2);
  });

  it('a call still being posted when another finds the session lost gets its own 404 and runs on the new session, not reported unknown', async () => {
    const journal = journalPath();
    let server: HttpServer = await startHttpServer(journal, 0, 'http-session');
    cleanups.push(() => server.kill());
    // The slow call's POST is held back until the other has gone out, so it is still being sent when the
    // other meets the 404; no SSE reconnect, so only these two requests can find the session lost.
    let slowEntered!: () => void;
    const slowIsOut = new Promise<void>((resolve) => (slowEntered = resolve));
    const fetchWithHold: typeof fetch = async (input, init) => {
      const body = typeof init?.body === 'string' ? init.body : '';
      if (body.includes('slow@example.com')) {
        slowEntered();
        await new Promise((resolve) => setTimeout(resolve, 1_500));
      } else if (body.includes('fast@example.com')) {
        await slowIsOut;
      }
      return fetch(input, init);
    };
    let connects = 0;
    const connection = new McpConnection(async () => {
      connects++;
      const client = new Client({ name: 'test-worker', version: '1.0.0' });
      await client.connect(
        new StreamableHTTPClientTransport(server.url, {
          fetch: fetchWithHold,
          reconnectionOptions: {
            maxRetries: 0,
            initialReconnectionDelay: 1_000,
            maxReconnectionDelay: 1_000,
            reconnectionDelayGrowFactor: 1,
          },
        }),
      );
      return client;
    });
    cleanups.push(() => connection.close());
    const tools = await mcpTools(connection, { include: ['op_default'], timeoutMs: 30_000 });
    const l = await lane();
    l.worker({ tools, onAmbiguous: 'report' }, { concurrency: 4 });
    expect(results(await l.run(jobData([call('op_default', { to: 'before@example.com' })])))).toMatchObject([{ outcome: 'executed' }]);

    await server.kill();
    server = await startHttpServer(journal, server.port, 'http-session');
    const added = new Map(
      await Promise.all(
        ['slow', 'fast'].map(
          async (name) => [name, await l.add(jobData([call('op_default', { to: `${name}@example.com` })]), { attempts: 1 })] as const,
        ),
      ),
    );
    for (const [name, job] of added) {
      expect(results(await l.settle(job, 30_000))).toMatchObject([{ outcome: 'executed', content: `sent to ${name}@example.com` }]);
    }
    const received = readJournal(journal).filter((e) => e.phase === 'received');
    expect(received.map((e) => e.args?.to).sort()).toEqual(['before@example.com', 'fast@example.com', 'slow@example.com']);
    expect(received.filter((e) => e.args?.to !== 'before@example.com').every((e) => e.pid === server.child.pid)).toBe(true);
    expect(connects).toBe(2);
  });
});
