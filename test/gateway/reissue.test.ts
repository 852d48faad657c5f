/**
 * The protocol's re-issue: a client whose answer never came sends the call
 * again with a new request id. Through the gateway (a front process and a
 * worker process, the fixture server spawned over stdio by the worker, a
 * real MCP SDK client) the re-issue is the same call: it replays, or waits
 * for the first one, or (when the worker running it died mid-call) gets the
 * whether-it-ran-is-unknown answer, and the upstream runs it once at most.
 * Two calls the client tells apart (call ids in `_meta`) both run.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { journaled, readJournal } from '../mcp/support.js';
import { freePort } from '../support/ports.js';
import { useRedis, waitUntil } from '../support/redis-fixture.js';
import { fixtureGateway, gatewayClient, killGateways, outcomeOf, startGateway, textOf, type GatewayProcess } from './support.js';

const fixture = useRedis();
const TOKEN = 'reissue-token-0123456789';
let journal: string;
let config: string;
let front: GatewayProcess;
let worker: GatewayProcess;
let client: Client;

/** The journal's entries for calls to this address. */
const callsTo = (to: string) => readJournal(journal).filter((e) => e.args?.to === to);

beforeAll(async () => {
  ({ journal, config } = fixtureGateway({ http: { port: await freePort(), tokens: [{ tenant: 'acme', token: TOKEN }] } }));
  [worker, front] = await Promise.all([
    startGateway(config, ['--worker'], fixture.handle().url),
    startGateway(config, ['--front-only'], fixture.handle().url),
  ]);
  ({ client } = await gatewayClient(front.url!, { token: TOKEN }));
}, 90_000);

afterAll(async () => {
  await client?.close().catch(() => undefined);
  await killGateways();
});

describe('the same call sent twice', () => {
  it('in one session, with no call id: the second replays the first, and the upstream ran it once', async () => {
    const args = { to: 'twice@example.com', note: 'hello' };
    const first = await client.callTool({ name: 'op_nondestructive', arguments: args });
    const second = await client.callTool({ name: 'op_nondestructive', arguments: { note: 'hello', to: 'twice@example.com' } });
    expect([textOf(first), outcomeOf(first)]).toEqual(['sent to twice@example.com', 'executed']);
    expect([textOf(second), outcomeOf(second)]).toEqual(['sent to twice@example.com', 'replayed']);
    expect(callsTo('twice@example.com').map((e) => e.phase)).toEqual(['received', 'sent']);
  });

  it('at once, while the first still runs: the second waits for it and gets its result; the upstream ran it once', async () => {
    const args = { to: 'together@example.com', holdMs: 600 };
    const [first, second] = await Promise.all([
      client.callTool({ name: 'op_nondestructive', arguments: args }),
      journaled(journal, (e) => e.phase === 'received' && e.args?.to === 'together@example.com').then(() =>
        client.callTool({ name: 'op_nondestructive', arguments: args }),
      ),
    ]);
    expect([textOf(first), textOf(second)]).toEqual(['sent to together@example.com', 'sent to together@example.com']);
    expect(callsTo('together@example.com').map((e) => e.phase)).toEqual(['received', 'sent']);
  });

  it('with two call ids: two calls, both run; a call id sent again replays its own call', async () => {
    const args = { to: 'two-ids@example.com' };
    const a = await client.callTool({ name: 'op_nondestructive', arguments: args, _meta: { 'bullmq-tool-receipts/call-id': 'a' } });
    const b = await client.callTool({ name: 'op_nondestructive', arguments: args, _meta: { 'bullmq-tool-receipts/call-id': 'b' } });
    const aAgain = await client.callTool({ name: 'op_nondestructive', arguments: args, _meta: { 'bullmq-tool-receipts/call-id': 'a' } });
    expect([outcomeOf(a), outcomeOf(b), outcomeOf(aAgain)]).toEqual(['executed', 'executed', 'replayed']);
    expect(callsTo('two-ids@example.com').filter((e) => e.phase === 'sent')).toHaveLength(2);
  });

  it('under one _meta run id, from another session: the same call, replayed', async () => {
    const meta = { 'bullmq-tool-receipts/run-id': 'conversation-7' };
    const args = { to: 'shared-run@example.com' };
    const first = await client.callTool({ name: 'op_nondestructive', arguments: args, _meta: meta });
    const other = await gatewayClient(front.url!, { token: TOKEN });
    try {
      const again = await other.client.callTool({ name: 'op_nondestructive', arguments: args, _meta: meta });
      const elsewhere = await other.client.callTool({ name: 'op_nondestructive', arguments: args });
      expect([outcomeOf(first), outcomeOf(again), outcomeOf(elsewhere)]).toEqual(['executed', 'replayed', 'executed']);
    } finally {
      await other.client.close();
    }
    expect(callsTo('shared-run@example.com').filter((e) => e.phase === 'sent')).toHaveLength(2);
  });
});

describe('a call whose answer was cut off by the front dying', () => {
  it('sent again after the front restarted (a new request id, the same session): the first call’s result, the effect once', async () => {
    const args = { to: 'cut@example.com', holdMs: 2500 };
    const abandoned = new AbortController();
    const first = client
      .callTool({ name: 'op_nondestructive', arguments: args }, undefined, { signal: abandoned.signal })
      .catch((e: unknown) => e);
    await journaled(journal, (e) => e.phase === 'received' && e.args?.to === 'cut@example.com');
    await front.kill();
    front = await startGateway(config, ['--front-only'], fixture.handle().url);
    // The upstream is still holding the first call: the re-issue waits for it, then gets its result.
    const again = await client.callTool({ name: 'op_nondestructive', arguments: args }, undefined, { timeout: 30_000 });
    abandoned.abort();
    await first;
    // Waited for (the first call still ran when it came) or replayed (it had finished): its result either way.
    expect(textOf(again)).toBe('sent to cut@example.com');
    expect(['executed', 'replayed']).toContain(outcomeOf(again));
    const later = await client.callTool({ name: 'op_nondestructive', arguments: args });
    expect(outcomeOf(later)).toBe('replayed');
    expect(callsTo('cut@example.com').map((e) => e.phase)).toEqual(['received', 'sent']);
  });

  it('when the worker died too, with the upstream mid-call: the re-issue is told whether it ran is unknown, and it never runs again', async () => {
    const args = { to: 'lost@example.com', holdMs: 1500, stubborn: true };
    const abandoned = new AbortController();
    const first = client
      .callTool({ name: 'op_nondestructive', arguments: args }, undefined, { signal: abandoned.signal })
      .catch((e: unknown) => e);
    await journaled(journal, (e) => e.phase === 'received' && e.args?.to === 'lost@example.com');
    await Promise.all([front.kill(), worker.kill()]);
    // The upstream (the dead worker's child) finishes the call; its answer has nowhere to go.
    await journaled(journal, (e) => e.phase === 'sent' && e.args?.to === 'lost@example.com');
    [front, worker] = await Promise.all([
      startGateway(config, ['--front-only'], fixture.handle().url),
      startGateway(config, ['--worker'], fixture.handle().url),
    ]);
    const again = await client.callTool({ name: 'op_nondestructive', arguments: args }, undefined, { timeout: 30_000 });
    abandoned.abort();
    await first;
    expect(again.isError).toBe(true);
    expect(outcomeOf(again)).toBe('ambiguous');
    expect(textOf(again)).toMatch(/^Whether this op_nondestructive call ran is unknown/);
    expect(textOf(again)).toMatch(/Do not retry it blindly/);
    const receiptKey = again._meta?.['bullmq-tool-receipts/receipt-key'];
    expect(receiptKey).toEqual(expect.stringContaining(':rcpt:{acme|'));
    // Asked once more: the same answer, and still nothing sent again.
    const thrice = await client.callTool({ name: 'op_nondestructive', arguments: args });
    expect(outcomeOf(thrice)).toBe('ambiguous');
    await waitUntil(
      async () => callsTo('lost@example.com').map((e) => e.phase),
      (phases) => phases.length >= 2,
    );
    expect(callsTo('lost@example.com').map((e) => e.phase)).toEqual(['received', 'sent']);
  });
});
