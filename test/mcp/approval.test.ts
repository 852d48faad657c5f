/**
 * `mcpTools(..., { approval })` against the SDK's real MCP server (own
 * process, stdio) with real BullMQ and Redis: `'destructive'` makes the
 * tools the wrapper treats as destructive wait for a person, the others run
 * at once; a tool's own setting wins; bad approval options are refused. The
 * server's journal counts what was actually sent.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ToolJobResult } from '../../src/bullmq/index.js';
import { approveCall, listPendingApprovals, type PendingApproval } from '../../src/approvals/index.js';
import { InvalidMcpToolsOptionsError, mcpTools } from '../../src/mcp/index.js';
import { call, jobData, useLanes, type Lane } from '../bullmq/fixture.js';
import { journaled, mcpTarget, readJournal, type McpTarget } from './support.js';

const lane = useLanes({ queues: 'redis' });
let target: McpTarget;

beforeAll(async () => {
  target = await mcpTarget('stdio');
}, 60_000);
afterAll(async () => {
  await target?.close();
});

async function pendingOf(l: Lane): Promise<PendingApproval> {
  const until = Date.now() + 20_000;
  for (;;) {
    const [pending] = await listPendingApprovals({ redis: l.redis, prefix: l.prefix });
    if (pending) return pending;
    if (Date.now() > until) throw new Error('no call became pending');
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** The server's journal entries (received, sent) of the calls to `to`. */
const sentTo = (to: string) => readJournal(target.journal).filter((e) => e.args?.['to'] === to);

describe("mcpTools' approval option", () => {
  it("'destructive': a destructive tool waits and runs once when approved; a non-destructive one runs at once", async () => {
    const tools = await mcpTools(target.connection, {
      approval: 'destructive',
      redact: (args) => ({ to: (args as { to: string }).to }),
      include: ['op_default', 'op_nondestructive', 'op_readonly'],
    });
    const approvalOf = (name: string) => tools.find((t) => t.name === name)!.approval;
    // op_default has no destructiveHint, so MCP's default (destructive) holds.
    expect([approvalOf('op_default'), approvalOf('op_nondestructive'), approvalOf('op_readonly')]).toEqual([
      'always',
      undefined,
      undefined,
    ]);

    const l = await lane();
    l.worker({ tools });
    const quiet = await l.run(jobData([call('op_nondestructive', { to: 'quiet@example.com' })]));
    expect((quiet.returnvalue as ToolJobResult).results.map((r) => r.outcome)).toEqual(['executed']);

    const job = await l.add(jobData([call('op_default', { to: 'held@example.com', note: 'secret note' })]));
    const pending = await pendingOf(l);
    expect(pending).toMatchObject({ toolName: 'op_default', shown: { to: 'held@example.com' } });
    expect(sentTo('held@example.com')).toEqual([]);
    await approveCall({ redis: l.redis, prefix: l.prefix, ...pending, actor: 'ana', queue: l.queue });
    const done = await l.settle(job);
    expect((done.returnvalue as ToolJobResult).results.map((r) => r.outcome)).toEqual(['executed']);
    await journaled(target.journal, (e) => e.phase === 'sent' && e.args?.['to'] === 'held@example.com');
    expect(sentTo('held@example.com').map((e) => e.phase)).toEqual(['received', 'sent']);
  });

  it("a tool's own setting wins: false exempts it, a rule of its arguments gives the reason", async () => {
    const reason = (args: unknown) => ({ reason: `mail to ${(args as { to: string }).to}` });
    const tools = await mcpTools(target.connection, {
      approval: 'always',
      include: ['op_default', 'op_nondestructive'],
      tools: { op_default: { approval: false }, op_nondestructive: { approval: reason, approvalTimeoutMs: 60_000 } },
    });
    expect(tools.find((t) => t.name === 'op_default')!.approval).toBeUndefined();
    expect(tools.find((t) => t.name === 'op_nondestructive')).toMatchObject({ approval: reason, approvalTimeoutMs: 60_000 });
  });

  it('refuses approval options that cannot work, naming them', async () => {
    await expect(mcpTools(target.connection, { approval: 'sometimes' as never })).rejects.toThrow(InvalidMcpToolsOptionsError);
    await expect(mcpTools(target.connection, { approval: 'sometimes' as never })).rejects.toThrow(/'destructive'/);
    await expect(mcpTools(target.connection, { tools: { op_default: { approvalTimeoutMs: 0 } } })).rejects.toThrow(
      /tools\.op_default\.approvalTimeoutMs/,
    );
    await expect(mcpTools(target.connection, { tools: { op_default: { approval: 'never' as never } } })).rejects.toThrow(
      InvalidMcpToolsOptionsError,
    );
  });
});
