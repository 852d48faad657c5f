/**
 * What an MCP server may list that a model API or a shared validator would
 * trip on, against a real server over stdio (test/fixtures/mcp/odd-server.ts)
 * with real Workers and Redis: two inputSchemas with one `$id`, tool names
 * model APIs refuse (and one spelt to take a mapped name), a schema zod
 * cannot import (`if`/`then`), and stray keys under `additionalProperties: false`.
 */
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InvalidToolDefinitionError, toolListForModel, type ToolJobResult } from '../../src/bullmq/index.js';
import { InvalidMcpToolsOptionsError, McpConnection, mcpTools, modelToolNames, type McpToolDefinition } from '../../src/mcp/index.js';
import { call, jobData, useLanes } from '../bullmq/fixture.js';
import { journalPath, ODD_SERVER_SCRIPT, readJournal, stdioClient } from './support.js';

const lane = useLanes();
const results = (job: { returnvalue: unknown }) => (job.returnvalue as ToolJobResult).results;
const MODEL_SAFE = /^[A-Za-z0-9_-]{1,64}$/;

/** A pino logger that keeps what `mcpTools` warns, each line as its fields and its message. */
function warnings() {
  const lines: Array<{ fields: Record<string, unknown>; message: string }> = [];
  const logger = pino(
    { level: 'warn' },
    {
      write(line: string) {
        const { msg, ...fields } = JSON.parse(line) as Record<string, unknown>;
        lines.push({ fields, message: String(msg) });
      },
    },
  );
  return { lines, logger };
}

describe('an MCP server with odd tools, over stdio', () => {
  const journal = journalPath();
  let connection: McpConnection;
  beforeAll(() => {
    connection = new McpConnection(() => stdioClient(journal, { script: ODD_SERVER_SCRIPT }));
  });
  afterAll(async () => {
    await connection.close();
  });
  const byServerName = (tools: McpToolDefinition[], name: string) => tools.find((t) => t.mcp.name === name)!;
  const received = (tool: string) => readJournal(journal).filter((e) => e.tool === tool);

  it('checks each tool against its own inputSchema when two share an $id', async () => {
    const tools = await mcpTools(connection, { include: ['first', 'second'] });
    const l = await lane();
    l.worker({ tools });
    const job = await l.run(
      jobData([call('first', { a: 'x' }), call('second', { b: 2 }), call('second', { a: 'x' }), call('first', { b: 2 })]),
    );
    expect(results(job).map((r) => r.outcome)).toEqual(['executed', 'executed', 'rejected', 'rejected']);
    expect(results(job)[2]!.content).toMatch(/Invalid input for second: .*b/);
    expect(received('second').map((e) => e.args)).toEqual([{ b: 2 }]);

    // One validator object for every tool cannot tell the two schemas apart: refused, naming both; a function is fine.
    await expect(mcpTools(connection, { include: ['first', 'second'], validator: new AjvJsonSchemaValidator() })).rejects.toThrow(
      /"first" and "second" both have an inputSchema with \$id "urn:example:args".*function that makes one per tool/,
    );
    await expect(mcpTools(connection, { include: ['first', 'second'], validator: new AjvJsonSchemaValidator() })).rejects.toBeInstanceOf(
      InvalidMcpToolsOptionsError,
    );
    const own = await mcpTools(connection, { include: ['first', 'second'], validator: () => new AjvJsonSchemaValidator() });
    expect(own.find((t) => t.name === 'second')!.input.safeParse({ b: 2 }).success).toBe(true);
  });

  it('offers a name model APIs refuse under a model-safe, unique name, and calls the server under its own', async () => {
    const log = warnings();
    const tools = await mcpTools(connection, { namePrefix: 'fs_', logger: log.logger });
    const names = tools.map((t) => t.name);
    expect(names.every((n) => MODEL_SAFE.test(n))).toBe(true);
    expect(new Set(names).size).toBe(names.length);
    const serverNames = tools.map((t) => t.mcp.name);
    expect(names).toEqual(modelToolNames(serverNames, 'fs_'));

    expect(byServerName(tools, 'files_read').name).toBe('fs_files_read');
    const dotted = byServerName(tools, 'files.read').name;
    const spelt = serverNames.find((n) => /^files_read_[0-9a-f]{8}$/.test(n))!;
    // The server listed a safe name spelt to equal the mapped one: both are offered, apart.
    expect(byServerName(tools, spelt).name).toBe(`fs_${spelt}`);
    expect(modelToolNames(['files.read'])).toEqual([spelt]);
    expect(dotted).toMatch(/^fs_files_read_[0-9a-f]{8}$/);
    expect(dotted).not.toBe(`fs_${spelt}`);
    const long = serverNames.find((n) => n.length > 64)!;
    expect(byServerName(tools, long).name).toHaveLength(64);
    expect(byServerName(tools, 'mail/send now').name).toMatch(/^fs_mail_send_now_[0-9a-f]{8}$/);
    expect(toolListForModel(tools).map((t) => t.name)).toEqual(names);
    // A warning per renamed tool, naming both names.
    const renamed = log.lines.filter((w) => w.fields.offeredAs !== undefined);
    expect(renamed.map((w) => w.fields.tool).sort()).toEqual(['files.read', long, 'mail/send now'].sort());
    expect(renamed.find((w) => w.fields.tool === 'files.read')!.fields.offeredAs).toBe(dotted);

    const l = await lane();
    l.worker({ tools });
    const job = await l.run(
      jobData([call(dotted, { path: '/a' }), call(`fs_${spelt}`, { path: '/b' }), call(byServerName(tools, long).name, { path: '/c' })]),
    );
    expect(results(job).map((r) => r.content)).toEqual(['ran files.read', `ran ${spelt}`, `ran ${long}`]);
    expect(received('files.read').map((e) => e.args)).toEqual([{ path: '/a' }]);
    expect(received(spelt).map((e) => e.args)).toEqual([{ path: '/b' }]);
    expect(received(long).map((e) => e.args)).toEqual([{ path: '/c' }]);
  });

  it('a tool definition that cannot be made says how to leave the tool out with include; a bad namePrefix is refused', async () => {
    const quiet = warnings().logger;
    const attempt = mcpTools(connection, { tools: { 'files.read': { effect: 'keyed' } }, logger: quiet });
    await expect(attempt).rejects.toBeInstanceOf(InvalidToolDefinitionError);
    await expect(mcpTools(connection, { tools: { 'files.read': { effect: 'keyed' } }, logger: quiet })).rejects.toThrow(
      /keyWindowMs.*MCP tool "files\.read".*leave it out with `include`/,
    );
    await expect(mcpTools(connection, { namePrefix: 'mail.' })).rejects.toThrow(/namePrefix.*letters, digits/);
    await expect(mcpTools(connection, { namePrefix: 'p'.repeat(41) })).rejects.toBeInstanceOf(InvalidMcpToolsOptionsError);
  });

  it('an if/then schema: checked in full, no schema-driven repair, said at warn once per tool (not per call); stray keys are named', async () => {
    const log = warnings();
    const tools = await mcpTools(connection, { include: ['conditional', 'files_read'], logger: log.logger });
    const skipped = log.lines.filter((w) => w.fields.reason !== undefined);
    expect(skipped.map((w) => w.fields.tool)).toEqual(['conditional']);
    expect(String(skipped[0]!.fields.reason)).toMatch(/if\/then\/else/);
    expect(skipped[0]!.message).toMatch(/no schema-driven repair/);

    const l = await lane();
    l.worker({ tools });
    const job = await l.run(
      jobData([
        call('conditional', { kind: 'b' }),
        call('conditional', { kind: 'a', colour: 'red', size: 3 }),
        call('conditional', { kind: 'a', meta: '{"tag":"t"}' }),
        call('files_read', { path: '/x', mode: 'r' }),
        call('conditional', { kind: 'b', n: 1, meta: { tag: 't' } }),
      ]),
    );
    const out = results(job);
    expect(out.map((r) => r.outcome)).toEqual(['rejected', 'rejected', 'rejected', 'rejected', 'executed']);
    expect(out[0]!.content).toMatch(/Invalid input for conditional: .*n/);
    expect(out[1]!.content).toMatch(/not allowed here: "colour", "size"/);
    // No repair for this tool: the double-encoded object is not decoded (it would be for a schema zod imports).
    expect(out[2]!.content).toMatch(/meta/);
    expect(out[3]!.content).toMatch(/mode/);
    expect(received('conditional').map((e) => e.args)).toEqual([{ kind: 'b', n: 1, meta: { tag: 't' } }]);
    expect(log.lines.filter((w) => w.fields.reason !== undefined)).toHaveLength(1);
  });
});
