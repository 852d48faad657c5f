/**
 * The gateway as a desktop MCP client runs it: spawned over stdio
 * (`tool-receipts gateway --config … --stdio`), with the worker process it
 * starts itself (`--workers 1`), in front of two upstreams (over stdio and
 * over Streamable HTTP) whose tools it lists under their names. Its stdout carries nothing but MCP; a call
 * runs once and replays; a 10 MB argument is refused with an MCP error and
 * nothing is enqueued; when the client closes stdin, the gateway and its
 * worker (and the worker's upstream) all exit.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { alive, journalPath, readJournal, startHttpServer } from '../mcp/support.js';
import { onProcessEnd } from '../support/cleanup.js';
import { useRedis, waitUntil } from '../support/redis-fixture.js';
import { CLI_MAIN, fixtureGateway, outcomeOf, ROOT, textOf } from './support.js';

const fixture = useRedis();
const cleanups: Array<() => void> = [];
afterAll(() => cleanups.forEach((cleanup) => cleanup()));

describe('the gateway over stdio, with the worker process it starts', () => {
  it('lists two upstreams’ tools (stdio and HTTP) under their names, runs a call once and replays it, refuses a 10 MB argument, and is gone with its worker when the client closes', async () => {
    // Two upstreams, the fixture server over stdio and over Streamable HTTP, each with its journal.
    const post = journalPath();
    const remote = await startHttpServer(post);
    cleanups.push(() => void remote.kill());
    const { journal, prefix, config } = fixtureGateway({ stdio: { tenant: 'desk' } }, { post: { url: remote.url.href } });
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: ['--import', 'tsx', CLI_MAIN, 'gateway', '--config', config, '--stdio', '--workers', '1'],
      env: { ...(process.env as Record<string, string>), REDIS_URL: fixture.handle().url, LOG_LEVEL: 'warn' },
      cwd: ROOT,
      stderr: 'pipe',
    });
    let stderr = '';
    transport.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const client = new Client({ name: 'desktop', version: '1.0.0' });
    await client.connect(transport);
    const gatewayPid = transport.pid!;
    cleanups.push(onProcessEnd(() => process.kill(gatewayPid, 'SIGKILL')));

    const names = (await client.listTools()).tools.map((t) => t.name);
    expect(names).toEqual(expect.arrayContaining(['mail_op_nondestructive', 'post_op_nondestructive']));
    expect(names).not.toContain('op_nondestructive');
    // The worker process may still be starting: the call waits for it.
    const first = await client.callTool({ name: 'post_op_nondestructive', arguments: { to: 'desk@example.com' } }, undefined, {
      timeout: 60_000,
    });
    const again = await client.callTool({ name: 'post_op_nondestructive', arguments: { to: 'desk@example.com' } });
    expect([textOf(first), outcomeOf(first), outcomeOf(again)]).toEqual(['sent to desk@example.com', 'executed', 'replayed']);
    expect([readJournal(post).filter((e) => e.phase === 'sent'), readJournal(journal)]).toEqual([
      [expect.objectContaining({ tool: 'op_nondestructive' })],
      [],
    ]);
    // One receipt, the stdio config's tenant's, in the run of this gateway process.
    expect(await fixture.connect().keys(`${prefix}:rcpt:*`)).toEqual([
      expect.stringMatching(new RegExp(`^${prefix}:rcpt:\\{desk\\|stdio%3A`)),
    ]);

    const huge = { to: 'huge@example.com', note: 'x'.repeat(10 * 1024 * 1024) };
    await expect(client.callTool({ name: 'mail_op_nondestructive', arguments: huge })).rejects.toMatchObject({
      code: -32602,
      message: expect.stringMatching(
        /The arguments of mail_op_nondestructive are \d+ bytes, more than this gateway takes \(1048576\); nothing was run/,
      ),
    });
    expect(readJournal(journal)).toEqual([]);
    // The stdio upstream is the worker's child: it goes when the worker goes.
    await client.callTool({ name: 'mail_op_readonly', arguments: { to: 'pid@example.com' } });
    const upstreamPid = readJournal(journal)[0]!.pid;

    await client.close();
    await waitUntil(
      async () => [alive(gatewayPid), alive(upstreamPid)],
      (running) => !running[0] && !running[1],
      20_000,
      `the gateway (${gatewayPid}) and its worker's upstream (${upstreamPid}) to exit; stderr: ${stderr}`,
    );
    expect(stderr).not.toMatch(/"level":50/);
  }, 90_000);
});
