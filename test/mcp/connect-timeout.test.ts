/**
 * connectTimeoutMs: a real MCP server process that never answers
 * `initialize`, `tools/list` or its second page (over stdio, and over
 * Streamable HTTP) fails `mcpTools` in that time with a typed error, well
 * before the MCP SDK's own 60 s; a call whose reconnect hangs never started.
 */
import { afterEach, describe, expect, it } from 'vitest';
import {
  DEFAULT_MCP_CONNECT_TIMEOUT_MS,
  InvalidMcpToolsOptionsError,
  McpConnectError,
  McpConnection,
  McpToolListError,
  mcpTools,
} from '../../src/mcp/index.js';
import { call, jobData, useLanes } from '../bullmq/fixture.js';
import { waitUntil } from '../support/redis-fixture.js';
import { httpClient, journalPath, ODD_SERVER_SCRIPT, startHttpServer, stdioClient, type HttpServer } from './support.js';

const lane = useLanes();
/** Far below the SDK's 60 s, far above what a loaded machine needs to fail a 500 ms limit. */
const WELL_BEFORE_SDK_TIMEOUT_MS = 20_000;

describe('connectTimeoutMs', () => {
  const cleanups: Array<() => Promise<unknown> | void> = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await (async () => cleanup())().catch(() => undefined);
  });
  /** A connection to the odd server over stdio, hanging as `hang` says; its processes are killed after the test. */
  const hanging = (hang: string) => {
    const journal = journalPath();
    const connection = new McpConnection(() =>
      stdioClient(journal, {
        script: ODD_SERVER_SCRIPT,
        env: { MCP_HANG: hang },
        onSpawn: (pid) => void cleanups.push(() => void process.kill(pid, 'SIGKILL')),
      }),
    );
    cleanups.push(() => connection.close());
    return connection;
  };
  const timed = async (work: Promise<unknown>) => {
    const started = performance.now();
    const error = await work.then(
      () => undefined,
      (e: unknown) => e,
    );
    return { error, ms: performance.now() - started };
  };

  it('a stdio server that never answers initialize fails mcpTools with mcp.connect', async () => {
    const { error, ms } = await timed(mcpTools(hanging('initialize'), { connectTimeoutMs: 500 }));
    expect(error).toBeInstanceOf(McpConnectError);
    expect((error as McpConnectError).code).toBe('mcp.connect');
    expect((error as Error).message).toMatch(/did not connect \(connect and initialize\) within 500 ms \(connectTimeoutMs\)/);
    expect(ms).toBeLessThan(WELL_BEFORE_SDK_TIMEOUT_MS);
  });

  it('a server that never answers tools/list, or its second page, fails mcpTools with mcp.tool_list', async () => {
    // Connected first (spawning the server takes its own time): the limit is then the list's alone.
    const lists = hanging('list');
    await lists.client();
    const first = await timed(mcpTools(lists, { connectTimeoutMs: 500 }));
    expect(first.error).toBeInstanceOf(McpToolListError);
    expect((first.error as Error).message).toMatch(/tools\/list failed on page 1: no answer within 500 ms \(connectTimeoutMs\)/);
    expect(first.ms).toBeLessThan(WELL_BEFORE_SDK_TIMEOUT_MS);
    const pages = hanging('page2');
    await pages.client();
    const second = await timed(mcpTools(pages, { connectTimeoutMs: 500 }));
    expect(second.error).toBeInstanceOf(McpToolListError);
    expect((second.error as Error).message).toMatch(/page 2: no answer within 500 ms/);
    expect(second.ms).toBeLessThan(WELL_BEFORE_SDK_TIMEOUT_MS);
  });

  it('a Streamable HTTP endpoint that never answers fails mcpTools with mcp.connect', async () => {
    const server: HttpServer = await startHttpServer(journalPath(), 0, 'http', {
      script: ODD_SERVER_SCRIPT,
      env: { MCP_HANG: 'initialize' },
    });
    cleanups.push(() => server.kill());
    const connection = new McpConnection(() => httpClient(server.url));
    cleanups.push(() => connection.close());
    const { error, ms } = await timed(mcpTools(connection, { connectTimeoutMs: 500 }));
    expect(error).toBeInstanceOf(McpConnectError);
    expect(ms).toBeLessThan(WELL_BEFORE_SDK_TIMEOUT_MS);
  });

  it('a call whose reconnect hangs never started: its receipt fails neverStarted and the job retries', async () => {
    const journal = journalPath();
    let hang = false;
    const connection = new McpConnection(() =>
      stdioClient(journal, {
        script: ODD_SERVER_SCRIPT,
        env: { MCP_HANG: hang ? 'initialize' : '' },
        onSpawn: (pid) => void cleanups.push(() => void process.kill(pid, 'SIGKILL')),
      }),
    );
    cleanups.push(() => connection.close());
    await connection.client();
    const tools = await mcpTools(connection, { include: ['files_read'], connectTimeoutMs: 500 });
    hang = true;
    await (await connection.client()).close();
    const l = await lane();
    const { processor } = l.worker({ tools });
    const data = jobData([call('files_read', { path: '/x' })]);
    const job = await l.add(data, { attempts: 20, backoff: { type: 'fixed', delay: 200 } });
    // More failed attempts than the breaker's limit (5): the server is unreachable, which is not the tool's failure.
    await waitUntil(
      async () => (await l.queue.getJob(job.id!))?.attemptsMade ?? 0,
      (n) => n >= 6,
      30_000,
      'six failed attempts',
    );
    expect(await l.receipt(data.tenantId, data.runId)).toMatchObject({ status: 'failed', tier: 'neverStarted' });
    expect((await l.queue.getJob(job.id!))!.failedReason).toMatch(/within 500 ms \(connectTimeoutMs\)/);
    expect(await processor.breaker.removal(data.tenantId, data.runId, 'files_read')).toBeNull();
  });

  it('is an option: a positive whole number of ms, default 10 s', async () => {
    expect(DEFAULT_MCP_CONNECT_TIMEOUT_MS).toBe(10_000);
    const connection = hanging('initialize');
    for (const bad of [0, -1, 1.5, Number.NaN, '500', 2 ** 31]) {
      const refused = await mcpTools(connection, { connectTimeoutMs: bad as number }).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(refused, String(bad)).toBeInstanceOf(InvalidMcpToolsOptionsError);
      expect((refused as InvalidMcpToolsOptionsError).message).toMatch(/connectTimeoutMs/);
    }
    await expect(mcpTools(connection, { connectTimeout: 500 } as never)).rejects.toThrow(
      /unknown option `connectTimeout`; did you mean `connectTimeoutMs`\?/,
    );
  });
});
