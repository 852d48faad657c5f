/**
 * One gateway (a front and a worker process, the fixture server spawned over
 * stdio by each) and real MCP SDK clients, for what the front decides:
 * tenants from bearer tokens (two tenants' identical calls are two calls,
 * with a receipt each; a limit per tenant), requests refused before the SDK
 * sees them (no or a wrong token, a foreign Host, a foreign Origin, another
 * tenant's session, a body over the size cap), calls refused before anything
 * is enqueued (unknown tool, arguments failing the upstream's schema, a
 * `_meta` id the gateway cannot use, a 10 MB argument), and approvals: a
 * tool MCP's defaults call destructive waits for a person (`approval:
 * "destructive"`, the default); approved with `tool-receipts approve`, or by
 * the user at the client through MCP elicitation, it runs once; denied at
 * the client, it never runs; asked again, each answers as decided without
 * asking anyone twice.
 */
import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Queue } from 'bullmq';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { ElicitRequestSchema, type ElicitRequest, type ElicitResult } from '@modelcontextprotocol/sdk/types.js';
import { runCli } from '../../src/cli/cli.js';
import { Capture } from '../cli/support.js';
import { readJournal } from '../mcp/support.js';
import { useRedis } from '../support/redis-fixture.js';
import { YEAR_MS } from '../support/limit-windows.js';
import { fixtureGateway, gatewayClient, killGateways, outcomeOf, startGateway, textOf } from './support.js';

const fixture = useRedis();
const ACME = 'acme-token-0123456789abcdef';
const GLOBEX = 'globex-token-0123456789abcd';
const ALLOWED_ORIGIN = 'http://localhost:6274';
const {
  journal,
  prefix,
  queue: queueName,
  config,
} = fixtureGateway({
  http: {
    port: 0,
    tokens: [
      { tenant: 'acme', token: ACME },
      { tenant: 'globex', token: { env: 'GLOBEX_GATEWAY_TOKEN' } },
    ],
    allowedOrigins: [ALLOWED_ORIGIN],
  },
  limits: [{ name: 'safe-mails', per: 'tenant', max: 1, windowMs: YEAR_MS, tools: ['op_idempotent_safe'] }],
  approvals: { elicit: true, waitMs: 2000 },
  // No worker is killed here: BullMQ's default 30 s lock, which a worker busy with a 9 MB result keeps on a loaded
  // machine (with a short one it lost the lock of a call beside, and the call was cut off, unknown).
  worker: {},
});
let url: string;
let acme: Client;
let globex: Client;

const INITIALIZE = JSON.stringify({
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
});

/** One raw HTTP request to the front (any headers, Host included); its status and body. */
function send(
  headers: Record<string, string>,
  body = INITIALIZE,
  method = 'POST',
): Promise<{ status: number; body: string; session?: string }> {
  const target = new URL(url);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: target.hostname,
        port: target.port,
        path: target.pathname,
        method,
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
      },
      (res) => {
        let text = '';
        res.on('data', (chunk: Buffer) => (text += chunk.toString()));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, body: text, session: res.headers['mcp-session-id'] as string | undefined }),
        );
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** How many jobs were ever added to the gateway's queue (BullMQ's `added` events). */
async function addedJobs(): Promise<number> {
  const events = (await fixture.connect().xrange(`bull:${queueName}:events`, '-', '+')) as Array<[string, string[]]>;
  return events.filter(([, fields]) => fields[fields.indexOf('event') + 1] === 'added').length;
}

beforeAll(async () => {
  const env = { GLOBEX_GATEWAY_TOKEN: GLOBEX };
  const [front] = await Promise.all([
    startGateway(config, ['--front-only'], fixture.handle().url, env),
    startGateway(config, ['--worker'], fixture.handle().url, env),
  ]);
  url = front.url!;
  [{ client: acme }, { client: globex }] = await Promise.all([gatewayClient(url, { token: ACME }), gatewayClient(url, { token: GLOBEX })]);
}, 90_000);

afterAll(async () => {
  await Promise.all([acme?.close(), globex?.close()].map((p) => p?.catch(() => undefined)));
  await killGateways();
});

describe('tenants', () => {
  it('lists the upstream’s tools with their schemas and annotations', async () => {
    const { tools } = await acme.listTools();
    const tool = tools.find((t) => t.name === 'op_nondestructive');
    expect(tool?.annotations).toEqual({ destructiveHint: false });
    expect(tool?.inputSchema).toMatchObject({ type: 'object', required: ['to'], additionalProperties: false });
    expect(tools.find((t) => t.name === 'structured')?.outputSchema).toMatchObject({ required: ['queued'] });
  });

  it('two tenants making the same call under the same run id: two calls, a receipt each, no replay across them', async () => {
    const call = { name: 'op_nondestructive', arguments: { to: 'both@example.com' }, _meta: { 'bullmq-tool-receipts/run-id': 'shared' } };
    const fromAcme = await acme.callTool(call);
    const fromGlobex = await globex.callTool(call);
    const acmeAgain = await acme.callTool(call);
    expect([outcomeOf(fromAcme), outcomeOf(fromGlobex), outcomeOf(acmeAgain)]).toEqual(['executed', 'executed', 'replayed']);
    expect(readJournal(journal).filter((e) => e.args?.to === 'both@example.com' && e.phase === 'sent')).toHaveLength(2);
    const store = fixture.store({ prefix });
    expect(await store.listRun('acme', 'run:shared')).toHaveLength(1);
    expect(await store.listRun('globex', 'run:shared')).toHaveLength(1);
  });

  it('keeps a limit per tenant: past it, the call is refused with the sentence the model reads, and not run', async () => {
    const first = await acme.callTool({ name: 'op_idempotent_safe', arguments: { to: 'limit-1@example.com' } });
    const past = await acme.callTool({ name: 'op_idempotent_safe', arguments: { to: 'limit-2@example.com' } });
    const otherTenant = await globex.callTool({ name: 'op_idempotent_safe', arguments: { to: 'limit-3@example.com' } });
    expect([outcomeOf(first), outcomeOf(past), outcomeOf(otherTenant)]).toEqual(['executed', 'rejected', 'executed']);
    expect(past.isError).toBe(true);
    expect(textOf(past)).toMatch(/safe-mails/);
    expect(readJournal(journal).filter((e) => e.args?.to === 'limit-2@example.com')).toEqual([]);
  });

  it('refuses a request without a token, or with one it does not know, before anything else (401)', async () => {
    for (const headers of [{}, { authorization: 'Bearer not-a-token-of-this-gateway' }, { authorization: `Basic ${ACME}` }] as Record<
      string,
      string
    >[]) {
      const answer = await send(headers);
      expect(answer.status).toBe(401);
      expect(JSON.parse(answer.body)).toMatchObject({ error: { message: expect.stringMatching(/^Unauthorized/) } });
    }
    expect((await send({ authorization: `Bearer ${ACME}` })).status).toBe(200);
  });

  it('refuses a foreign Host (DNS rebinding) with 421 and a browser Origin it was not given with 403, token or not', async () => {
    const port = new URL(url).port;
    for (const host of ['evil.example', `evil.example:${port}`, 'localhost.']) {
      expect((await send({ authorization: `Bearer ${ACME}`, host })).status).toBe(421);
    }
    expect((await send({ authorization: `Bearer ${ACME}`, host: `localhost:${port}` })).status).toBe(200);
    for (const origin of ['http://evil.example', 'null', 'http://localhost:3000']) {
      expect((await send({ authorization: `Bearer ${ACME}`, origin })).status).toBe(403);
    }
    expect((await send({ authorization: `Bearer ${ACME}`, origin: ALLOWED_ORIGIN })).status).toBe(200);
  });

  it("tells a tenant that another tenant's session does not exist (404)", async () => {
    const opened = await send({ authorization: `Bearer ${ACME}` });
    expect(opened.session).toMatch(/^gw1\.n\./);
    const list = JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list' });
    const asGlobex = await send({ authorization: `Bearer ${GLOBEX}`, 'mcp-session-id': opened.session! }, list);
    expect(asGlobex.status).toBe(404);
    const asAcme = await send(
      { authorization: `Bearer ${ACME}`, 'mcp-session-id': opened.session!, 'mcp-protocol-version': '2025-11-25' },
      list,
    );
    expect(asAcme.status).toBe(200);
  });
});

describe('bad inputs: answered, and nothing enqueued', () => {
  it('an unknown tool, a bad _meta run id: MCP errors (-32602); arguments failing the schema: an error result naming what is wrong', async () => {
    const before = await addedJobs();
    const sentBefore = readJournal(journal).length;
    await expect(acme.callTool({ name: 'no_such_tool', arguments: {} })).rejects.toMatchObject({
      code: -32602,
      message: expect.stringContaining('Unknown tool "no_such_tool"'),
    });
    await expect(
      acme.callTool({ name: 'op_nondestructive', arguments: { to: 'a@example.com' }, _meta: { 'bullmq-tool-receipts/run-id': 7 } }),
    ).rejects.toMatchObject({ code: -32602 });
    for (const args of [{ to: 'not an address' }, { to: 'a@example.com', colour: 'red' }, {}]) {
      const refused = await acme.callTool({ name: 'op_nondestructive', arguments: args });
      expect(refused.isError).toBe(true);
      expect(outcomeOf(refused)).toBe('not_run');
      expect(textOf(refused)).toMatch(/^Invalid arguments for op_nondestructive: .+ Nothing was run/);
    }
    expect(await addedJobs()).toBe(before);
    expect(readJournal(journal)).toHaveLength(sentBefore);
  });

  it('a 10 MB argument: refused at the door (413), nothing read past the cap, nothing enqueued', async () => {
    const before = await addedJobs();
    const huge = { to: 'big@example.com', note: 'x'.repeat(10 * 1024 * 1024) };
    await expect(acme.callTool({ name: 'op_nondestructive', arguments: huge })).rejects.toThrow(/413|Payload too large/);
    expect(await addedJobs()).toBe(before);
    expect(readJournal(journal).filter((e) => e.args?.to === 'big@example.com')).toEqual([]);
    // The session goes on.
    expect(outcomeOf(await acme.callTool({ name: 'op_nondestructive', arguments: { to: 'after-big@example.com' } }))).toBe('executed');
  });

  it("a result over the stdio reader's 10 MiB default: the call is answered (cut), the upstream and the calls beside it go on", async () => {
    const big = acme.callTool({ name: 'picture', arguments: { bytes: 9_000_000 } }, undefined, { timeout: 120_000 });
    const beside = acme.callTool({ name: 'op_nondestructive', arguments: { to: 'beside-big@example.com' } }, undefined, {
      timeout: 120_000,
    });
    const [answered, besideAnswered] = await Promise.all([big, beside]);
    // Executed, or replayed when a worker busy with the 9 MB result lost a job's lock on a loaded machine and the
    // job came back: its result either way, and the upstream ran each call once.
    expect(['executed', 'replayed']).toContain(outcomeOf(answered));
    // Cut to what the gateway keeps as the upstream's text with a line saying so, never as the record's JSON.
    expect(textOf(answered)).toMatch(
      /^a grey square\n\[cut: the result was \d+ characters .* and 1 block\(s\) of other kinds left out\.\]$/,
    );
    expect([textOf(besideAnswered), outcomeOf(besideAnswered)]).toEqual([
      'sent to beside-big@example.com',
      expect.stringMatching(/^(executed|replayed)$/),
    ]);
    expect(readJournal(journal).filter((e) => e.args?.to === 'beside-big@example.com' && e.phase === 'received')).toHaveLength(1);
    expect(outcomeOf(await acme.callTool({ name: 'op_nondestructive', arguments: { to: 'after-picture@example.com' } }))).toBe('executed');
  }, 120_000);

  it('counts a replay as a replay: the queue sees it, the upstream does not', async () => {
    const queue = new Queue(queueName, { connection: fixture.connect() });
    try {
      const before = await addedJobs();
      const again = await acme.callTool({ name: 'op_nondestructive', arguments: { to: 'after-big@example.com' } });
      expect(outcomeOf(again)).toBe('replayed');
      expect(await addedJobs()).toBe(before + 1);
      expect(await queue.getJobCounts('waiting', 'active', 'delayed', 'failed')).toEqual({ waiting: 0, active: 0, delayed: 0, failed: 0 });
    } finally {
      await queue.close();
    }
    expect(readJournal(journal).filter((e) => e.args?.to === 'after-big@example.com' && e.phase === 'sent')).toHaveLength(1);
  });
});

const sentTo = (to: string) => readJournal(journal).filter((e) => e.args?.to === to && e.phase === 'sent');

describe('a call that needs approval', () => {
  it('from a client that cannot be asked: answered as awaiting approval; approved with the CLI, it runs once', async () => {
    const { client } = await gatewayClient(url, { token: ACME });
    try {
      const call = { name: 'op_default', arguments: { to: 'cli@example.com' } };
      const waiting = await client.callTool(call);
      expect(outcomeOf(waiting)).toBe('awaiting_approval');
      expect(textOf(waiting)).toMatch(/^This op_default call waits for a person's approval and has not run\./);
      const receiptKey = String(waiting._meta?.['bullmq-tool-receipts/receipt-key']);
      expect(sentTo('cli@example.com')).toEqual([]);
      // Asked again before anyone decided: still waiting, still one receipt.
      expect(outcomeOf(await client.callTool(call))).toBe('awaiting_approval');

      const out = new Capture();
      const err = new Capture();
      const code = await runCli(['approve', receiptKey, '--actor', 'ops@example.com', '--prefix', prefix], {
        stdout: out,
        stderr: err,
        env: { REDIS_URL: fixture.handle().url },
      });
      expect([code, err.text]).toEqual([0, '']);
      const ran = await client.callTool(call);
      expect(textOf(ran)).toBe('sent to cli@example.com');
      expect(['executed', 'replayed']).toContain(outcomeOf(ran));
      expect(outcomeOf(await client.callTool(call))).toBe('replayed');
      expect(sentTo('cli@example.com')).toHaveLength(1);
    } finally {
      await client.close();
    }
  });

  it('from a client that offers elicitation: its user is asked once; approved, the call runs once', async () => {
    const asked: ElicitRequest['params'][] = [];
    const { client } = await gatewayClient(url, { token: ACME, capabilities: { elicitation: { form: {} } } });
    client.setRequestHandler(ElicitRequestSchema, async (request): Promise<ElicitResult> => {
      asked.push(request.params);
      return { action: 'accept', content: { approve: true, note: 'looks right' } };
    });
    try {
      const call = { name: 'op_default', arguments: { to: 'yes@example.com' } };
      const ran = await client.callTool(call);
      expect([textOf(ran), outcomeOf(ran)]).toEqual(['sent to yes@example.com', 'executed']);
      expect(asked).toHaveLength(1);
      expect(asked[0]!.message).toMatch(/^Run the tool op_default\?/);
      expect(asked[0]!.message).toContain('"to":"yes@example.com"');
      expect(outcomeOf(await client.callTool(call))).toBe('replayed');
      expect(asked).toHaveLength(1);
      expect(sentTo('yes@example.com')).toHaveLength(1);
    } finally {
      await client.close();
    }
  });

  it('denied by the user at the client: never runs, and the answer says who denied it and why', async () => {
    let asked = 0;
    const { client } = await gatewayClient(url, { token: ACME, capabilities: { elicitation: { form: {} } } });
    client.setRequestHandler(ElicitRequestSchema, async (): Promise<ElicitResult> => {
      asked++;
      return { action: 'accept', content: { approve: false, note: 'wrong customer' } };
    });
    try {
      const call = { name: 'op_default', arguments: { to: 'no@example.com' } };
      const denied = await client.callTool(call);
      expect(denied.isError).toBe(true);
      expect(outcomeOf(denied)).toBe('denied');
      expect(textOf(denied)).toContain('wrong customer');
      expect(textOf(denied)).toContain('gateway-test');
      const again = await client.callTool(call);
      expect([outcomeOf(again), asked]).toEqual(['denied', 1]);
      expect(readJournal(journal).filter((e) => e.args?.to === 'no@example.com')).toEqual([]);
    } finally {
      await client.close();
    }
  });
});
