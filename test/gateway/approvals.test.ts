/**
 * Approvals through the gateway, with a real front and worker process: a
 * tool MCP's defaults call destructive waits for a person (`approval:
 * "destructive"`, the default). Approved with `tool-receipts approve` (the
 * CLI), or by the user at the client through MCP elicitation, it runs once;
 * denied at the client, it never runs; asked again, each answers as decided
 * without asking anyone twice.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ElicitRequestSchema, type ElicitRequest, type ElicitResult } from '@modelcontextprotocol/sdk/types.js';
import { runCli } from '../../src/cli/cli.js';
import { Capture } from '../cli/support.js';
import { journalPath, readJournal } from '../mcp/support.js';
import { useRedis } from '../support/redis-fixture.js';
import {
  FAST_WORKER,
  fixtureUpstream,
  gatewayClient,
  isolation,
  killGateways,
  outcomeOf,
  startGateway,
  textOf,
  writeConfig,
} from './support.js';

const fixture = useRedis();
const TOKEN = 'approvals-token-0123456789';
const journal = journalPath();
const { prefix, queue } = isolation();
let url: string;

const sentTo = (to: string) => readJournal(journal).filter((e) => e.args?.to === to && e.phase === 'sent');

beforeAll(async () => {
  const config = writeConfig({
    prefix,
    queue: { name: queue },
    upstreams: { mail: fixtureUpstream(journal) },
    http: { port: 0, tokens: [{ tenant: 'acme', token: TOKEN }] },
    approvals: { elicit: true, waitMs: 2000 },
    worker: FAST_WORKER,
  });
  const [front] = await Promise.all([
    startGateway(config, ['--front-only'], fixture.handle().url),
    startGateway(config, ['--worker'], fixture.handle().url),
  ]);
  url = front.url!;
}, 90_000);

afterAll(killGateways);

describe('a call that needs approval', () => {
  it('from a client that cannot be asked: answered as awaiting approval; approved with the CLI, it runs once', async () => {
    const { client } = await gatewayClient(url, { token: TOKEN });
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
    const { client } = await gatewayClient(url, { token: TOKEN, capabilities: { elicitation: { form: {} } } });
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
    const { client } = await gatewayClient(url, { token: TOKEN, capabilities: { elicitation: { form: {} } } });
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
