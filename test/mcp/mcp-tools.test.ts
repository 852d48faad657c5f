/**
 * MCP tools under the wrapper, against a real MCP server (the SDK's, in its
 * own process) over stdio and over Streamable HTTP on 127.0.0.1, with real
 * Queues, Workers and Redis. Effects are counted by the server's journal.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { toolListForModel, type AnyToolDefinition, type ToolJobResult } from '../../src/bullmq/index.js';
import { MCP_IDEMPOTENCY_KEY_META, mcpTools, InvalidMcpToolsOptionsError, type McpToolDefinition } from '../../src/mcp/index.js';
import { call, jobData, RETRYING, useLanes } from '../bullmq/fixture.js';
import { journaled, mcpTarget, readJournal, type McpTarget, type TransportKind } from './support.js';

const lane = useLanes();

const results = (job: { returnvalue: unknown }) => (job.returnvalue as ToolJobResult).results;

describe.each<TransportKind>(['stdio', 'http'])('mcpTools over %s', (kind) => {
  let target: McpTarget;
  let tools: McpToolDefinition[];
  beforeAll(async () => {
    target = await mcpTarget(kind);
    tools = await mcpTools(target.connection);
  }, 60_000);
  afterAll(async () => {
    await target?.close();
  });
  const byName = (name: string) => tools.find((t) => t.name === name)!;
  const sent = (tool: string) => readJournal(target.journal).filter((e) => e.tool === tool);

  it('reads every page of tools/list (page size 3), in the server order', async () => {
    expect(tools.map((t) => t.name)).toEqual([
      'op_default',
      'op_nondestructive',
      'op_idempotent',
      'op_idempotent_safe',
      'op_readonly',
      'op_readonly_claims_destructive',
      'op_all_false',
      'fail_mail',
      'lookup',
      'nested',
      'structured',
      'picture',
    ]);
  });

  it('gives each annotation combination its effect class, and runs read-only tools without a receipt', async () => {
    const flags = (name: string) => {
      const t = byName(name);
      return { effect: t.effect, readOnly: t.readOnly, idempotent: t.idempotent, destructive: t.destructive };
    };
    expect(flags('op_default')).toEqual({ effect: 'opaque', readOnly: false, idempotent: false, destructive: true });
    expect(flags('op_nondestructive')).toEqual({ effect: 'opaque', readOnly: false, idempotent: false, destructive: false });
    expect(flags('op_idempotent')).toEqual({ effect: 'resumable', readOnly: false, idempotent: true, destructive: true });
    expect(flags('op_idempotent_safe')).toEqual({ effect: 'resumable', readOnly: false, idempotent: true, destructive: false });
    expect(flags('op_readonly')).toEqual({ effect: 'opaque', readOnly: true, idempotent: true, destructive: false });
    expect(flags('op_readonly_claims_destructive')).toEqual({ effect: 'opaque', readOnly: true, idempotent: true, destructive: false });
    expect(flags('op_all_false')).toEqual({ effect: 'opaque', readOnly: false, idempotent: false, destructive: false });

    const l = await lane();
    l.worker({ tools });
    const data = jobData([call('op_readonly', { to: 'a@example.com' }), call('op_nondestructive', { to: 'b@example.com' })]);
    const job = await l.run(data);
    expect(results(job).map((r) => r.outcome)).toEqual(['executed', 'executed']);
    const receipts = await l.store.listRun(data.tenantId, data.runId);
    expect(receipts.map((r) => r.key.toolName)).toEqual(['op_nondestructive']);
  });

  it('an override wins, and a server annotation cannot loosen it', async () => {
    const overridden = await mcpTools(target.connection, {
      tools: {
        op_readonly: { effect: 'opaque' },
        op_nondestructive: { destructive: true },
        op_default: { effect: 'idempotent', destructive: false },
      },
    });
    const get = (name: string) => overridden.find((t) => t.name === name)!;
    // The server says read-only (so never destructive) and non-destructive; the team's word stands, and an
    // opaque tool with no destructiveHint is destructive by MCP's default.
    expect(get('op_readonly')).toMatchObject({ effect: 'opaque', readOnly: false, idempotent: false, destructive: true });
    expect(get('op_nondestructive')).toMatchObject({ effect: 'opaque', destructive: true });
    expect(get('op_default')).toMatchObject({ effect: 'resumable', idempotent: true, destructive: false });
    const distrusting = await mcpTools(target.connection, { trustAnnotations: false, include: ['op_readonly', 'op_idempotent_safe'] });
    expect(distrusting.map((t) => [t.name, t.effect, t.readOnly, t.destructive])).toEqual([
      ['op_idempotent_safe', 'opaque', false, true],
      ['op_readonly', 'opaque', false, true],
    ]);

    // Behaviour follows the override: the "read-only" tool now holds a receipt and is replayed, not re-run.
    const l = await lane();
    l.worker({ tools: overridden });
    const before = sent('op_readonly').length;
    const data = jobData([call('op_readonly', { to: 'c@example.com' }, 'toolu_ro')]);
    await l.run(data);
    const again = await l.run(jobData(data.calls, data));
    expect(results(again)[0]).toMatchObject({ outcome: 'replayed', content: 'sent to c@example.com' });
    expect(sent('op_readonly').length - before).toBe(2); // received + sent, once
    expect(await l.store.listRun(data.tenantId, data.runId)).toHaveLength(1);

    await expect(mcpTools(target.connection, { tools: { op_missing: { effect: 'opaque' } } })).rejects.toBeInstanceOf(
      InvalidMcpToolsOptionsError,
    );
    await expect(mcpTools(target.connection, { tools: { op_default: { readOnly: true } as never } })).rejects.toThrow(/not a tool setting/);
    await expect(mcpTools(target.connection, { tools: { op_idempotent: { reconcile: () => ({ status: 'unknown' }) } } })).rejects.toThrow(
      /op_idempotent has a reconcile, but the tool is idempotent \(from its annotations\)/,
    );
    await expect(mcpTools(target.connection, { tools: { op_default: { timeoutMs: -1 } } })).rejects.toThrow(
      /timeoutMs must be a positive integer/,
    );
  });

  it('sends the idempotency key in _meta; a replay sends nothing', async () => {
    const l = await lane();
    l.worker({ tools });
    const data = jobData([call('op_default', { to: 'd@example.com', note: 'key' }, 'toolu_key')]);
    const first = await l.run(data);
    expect(results(first)[0]).toMatchObject({ outcome: 'executed', content: 'sent to d@example.com' });
    const entries = sent('op_default').filter((e) => e.args?.note === 'key');
    expect(entries.map((e) => e.phase)).toEqual(['received', 'sent']);
    expect(entries[0]!.key).toMatch(/^trc_[0-9a-f]{40}$/);
    expect(MCP_IDEMPOTENCY_KEY_META).toBe('bullmq-tool-receipts/idempotency-key');
    const replay = await l.run(jobData(data.calls, data));
    expect(results(replay)[0]!.outcome).toBe('replayed');
    expect(sent('op_default').filter((e) => e.args?.note === 'key')).toHaveLength(2);
  });

  it('isError reaches the model as an error, is recorded as completed, and is not retried', async () => {
    const l = await lane();
    l.worker({ tools });
    const data = jobData([call('fail_mail', { to: 'full@example.com' }, 'toolu_fail')]);
    const job = await l.run(data, RETRYING);
    expect(await job.getState()).toBe('completed');
    expect(results(job)).toEqual([
      { type: 'tool_result', tool_use_id: 'toolu_fail', content: 'mailbox full@example.com is full', is_error: true, outcome: 'executed' },
    ]);
    expect(sent('fail_mail').filter((e) => e.phase === 'sent')).toHaveLength(1);
    expect(await l.receipt(data.tenantId, data.runId)).toMatchObject({ status: 'completed', attempts: 1 });
    const replay = await l.run(jobData(data.calls, data));
    expect(results(replay)[0]).toMatchObject({ outcome: 'replayed', is_error: true, content: 'mailbox full@example.com is full' });
    expect(sent('fail_mail').filter((e) => e.phase === 'sent')).toHaveLength(1);
  });

  it('rejects invalid arguments before anything is claimed', async () => {
    const l = await lane();
    l.worker({ tools });
    const before = readJournal(target.journal).length;
    const data = jobData([
      call('op_nondestructive', { to: 'not-an-email' }, 'toolu_format'),
      call('op_nondestructive', { to: 'e@example.com', extra: 1 }, 'toolu_extra'),
      call('nested', { to: { zip: null }, kind: 'letter' }, 'toolu_ref'),
      call('nested', { to: { city: 'Oslo' }, kind: 'postcard' }, 'toolu_enum'),
    ]);
    const job = await l.run(data);
    const out = results(job);
    expect(out.map((r) => r.outcome)).toEqual(['rejected', 'rejected', 'rejected', 'rejected']);
    expect(out[0]!.content).toMatch(/Invalid input for op_nondestructive: .*email/);
    expect(out[1]!.content).toMatch(/extra/);
    expect(out[2]!.content).toMatch(/to\.city/);
    expect(readJournal(target.journal).length).toBe(before);
    expect(await l.store.listRun(data.tenantId, data.runId)).toEqual([]);
  });

  it('repairs provably (a double-encoded object, a nullable left alone) and sends the arguments as repaired, no defaults added', async () => {
    const l = await lane();
    l.worker({ tools });
    const data = jobData([
      call('op_nondestructive', { to: 'f@example.com', meta: '{"tag":"t1"}' }, 'toolu_decode'),
      call('nested', { to: { city: 'Oslo', zip: null }, kind: 'parcel' }, 'toolu_nullable'),
    ]);
    const job = await l.run(data);
    expect(results(job).map((r) => r.outcome)).toEqual(['executed', 'executed']);
    const received = readJournal(target.journal).filter((e) => e.phase === 'received');
    expect(received.find((e) => e.tool === 'op_nondestructive' && e.args?.to === 'f@example.com')!.args).toEqual({
      to: 'f@example.com',
      meta: { tag: 't1' },
    });
    expect(received.find((e) => e.tool === 'nested')!.args).toEqual({ to: { city: 'Oslo', zip: null }, kind: 'parcel' });
  });

  it('reshapes a non-destructive call through the reshaper, never a destructive one', async () => {
    const l = await lane();
    const asked: string[] = [];
    l.worker({
      tools,
      reshaper: {
        reshape: async (request) => {
          asked.push(request.message.content.map((b) => (b as { name?: string }).name).join());
          return { ...request.message, content: request.message.content.map((b) => ({ ...b, input: { to: 'fixed@example.com' } })) };
        },
      },
    });
    const data = jobData([
      call('op_nondestructive', { recipient: 'g' }, 'toolu_soft'),
      call('op_default', { recipient: 'g' }, 'toolu_hard'),
    ]);
    const job = await l.run(data);
    const out = results(job);
    expect(out.map((r) => r.outcome)).toEqual(['executed', 'rejected']);
    expect(out[1]!.content).toMatch(/op_default is destructive and its input is invalid/);
    expect(asked).toEqual(['op_nondestructive']);
    const received = readJournal(target.journal).filter((e) => e.phase === 'received' && e.args?.to === 'fixed@example.com');
    expect(received.map((e) => e.tool)).toEqual(['op_nondestructive']);
  });

  it('a call that outlives its timeout had reached the server: unknown outcome, ambiguous for an opaque tool, not sent again', async () => {
    const quick = await mcpTools(target.connection, { include: ['op_nondestructive'], timeoutMs: 300 });
    const l = await lane();
    l.worker({ tools: quick, onAmbiguous: 'report' });
    const data = jobData([call('op_nondestructive', { to: 'slow@example.com', holdMs: 5_000 }, 'toolu_slow')]);
    const job = await l.run(data, RETRYING);
    expect(results(job)).toMatchObject([{ tool_use_id: 'toolu_slow', outcome: 'ambiguous', is_error: true }]);
    const received = readJournal(target.journal).filter((e) => e.phase === 'received' && e.args?.to === 'slow@example.com');
    expect(received).toHaveLength(1);
    expect(await l.receipt(data.tenantId, data.runId)).toMatchObject({ status: 'running', attempts: 1 });
  });

  it.runIf(kind === 'stdio')(
    'a cancelled job cancels the request on the server (ctx.signal), and the call is left to lapse, not settled',
    async () => {
      const l = await lane();
      const { worker, processor } = l.worker({ tools, leaseMs: 300 });
      const data = jobData([call('op_nondestructive', { to: 'cancel@example.com', holdMs: 60_000 }, 'toolu_cancel')]);
      const job = await l.add(data, { attempts: 1 });
      const received = await journaled(target.journal, (e) => e.phase === 'received' && e.args?.to === 'cancel@example.com');
      worker.cancelJob(job.id!, 'operator cancelled');
      const cancelled = await journaled(target.journal, (e) => e.phase === 'cancelled' && e.key === received.key);
      expect(cancelled.tool).toBe('op_nondestructive');
      const done = await l.settle(job);
      expect(await done.getState()).toBe('failed');
      // The request had reached the server: nothing proves the effect did not land, so the receipt is not settled.
      const [receipt] = await processor.store.listRun(data.tenantId, data.runId);
      expect(receipt).toMatchObject({ status: 'running', attempts: 1 });
    },
  );

  it('shows the model the server descriptions and schemas unchanged; keeps structuredContent, outputSchema and images', async () => {
    const listed = toolListForModel(tools as AnyToolDefinition[]);
    const raw = await (await target.connection.client()).listTools({ cursor: '9' });
    expect(listed.find((t) => t.name === 'nested')).toEqual({
      name: 'nested',
      description: 'A schema with $defs and $ref.',
      input_schema: raw.tools.find((t) => t.name === 'nested')!.inputSchema,
    });
    expect(byName('structured').mcp.outputSchema).toEqual({
      type: 'object',
      properties: { queued: { type: 'integer' } },
      required: ['queued'],
    });

    const l = await lane();
    l.worker({ tools, maxResultChars: 1_000_000 });
    const job = await l.run(jobData([call('structured', {}), call('picture', { bytes: 30 })]));
    const [structured, picture] = results(job);
    expect(JSON.parse(structured!.content)).toEqual({
      content: [{ type: 'text', text: '{"queued":3}' }],
      structuredContent: { queued: 3 },
    });
    expect(JSON.parse(picture!.content)).toEqual({
      content: [
        { type: 'text', text: 'a grey square' },
        { type: 'image', data: Buffer.alloc(30, 7).toString('base64'), mimeType: 'image/png' },
      ],
    });
  });
});
