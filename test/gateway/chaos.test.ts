/**
 * 200 calls from 4 MCP clients (two tenants) through one front, while worker
 * processes are SIGKILLed at random and replaced: every call is answered
 * (its result, or that whether it ran is unknown), and the upstream never
 * receives one call twice. The fixture server is spawned over stdio by each
 * worker and journals every call it receives, so a duplicate would show
 * whichever worker sent it.
 */
import { afterAll, describe, expect, it } from 'vitest';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { readJournal } from '../mcp/support.js';
import { useRedis } from '../support/redis-fixture.js';
import { gatewayClient, fixtureGateway, killGateways, outcomeOf, startGateway, textOf, type GatewayProcess } from './support.js';

const fixture = useRedis();
const CLIENTS = 4;
const CALLS_PER_CLIENT = 50;
const IN_FLIGHT_PER_CLIENT = 3;
const WORKERS = 3;
const TOKENS = { acme: 'chaos-acme-token-0123456789', globex: 'chaos-globex-token-012345678' } as const;

afterAll(killGateways);

describe('worker processes SIGKILLed at random under 200 calls from 4 clients', () => {
  it('answers every call, and the upstream receives none twice', async () => {
    const { journal, config } = fixtureGateway({
      http: { port: 0, tokens: Object.entries(TOKENS).map(([tenant, token]) => ({ tenant, token })) },
      // Shorter than FAST_WORKER's: a call cut off here may read as unknown, and kills come every second.
      worker: { leaseMs: 600, lockDurationMs: 1000, stalledIntervalMs: 500, concurrency: 4 },
    });
    const redisUrl = fixture.handle().url;
    const spawnWorker = () => startGateway(config, ['--worker'], redisUrl);
    const [front, ...firstWorkers] = await Promise.all([
      startGateway(config, ['--front-only'], redisUrl),
      ...Array.from({ length: WORKERS }, spawnWorker),
    ]);
    const alive = new Set<GatewayProcess>(firstWorkers);
    const startedCallsAt = performance.now();

    let done = false;
    let kills = 0;
    const killer = (async () => {
      while (!done) {
        await new Promise((resolve) => setTimeout(resolve, 600 + Math.random() * 600));
        if (done || alive.size < 2) continue;
        const victim = [...alive][Math.floor(Math.random() * alive.size)]!;
        alive.delete(victim);
        await victim.kill();
        kills++;
        void spawnWorker().then(
          (worker) => alive.add(worker),
          () => undefined,
        );
      }
    })();

    const answers: Array<{ to: string; result: CallToolResult }> = [];
    const failures: unknown[] = [];
    const clients = await Promise.all(
      Array.from({ length: CLIENTS }, (_, i) => gatewayClient(front.url!, { token: i % 2 === 0 ? TOKENS.acme : TOKENS.globex })),
    );
    await Promise.all(
      clients.map(async ({ client }, c) => {
        let next = 0;
        const lane = async () => {
          while (next < CALLS_PER_CLIENT) {
            const to = `c${c}-n${next++}@example.com`;
            try {
              const result = (await client.callTool(
                { name: 'op_nondestructive', arguments: { to, holdMs: 50 + Math.floor(Math.random() * 150) } },
                undefined,
                { timeout: 90_000 },
              )) as CallToolResult;
              answers.push({ to, result });
            } catch (error) {
              failures.push({ to, error: String(error) });
            }
          }
        };
        await Promise.all(Array.from({ length: IN_FLIGHT_PER_CLIENT }, lane));
      }),
    );
    done = true;
    const callsMs = performance.now() - startedCallsAt;
    await killer;
    await Promise.all(clients.map(({ client }) => client.close().catch(() => undefined)));

    expect(failures).toEqual([]);
    expect(answers).toHaveLength(CLIENTS * CALLS_PER_CLIENT);
    expect(kills).toBeGreaterThanOrEqual(2);
    const received = new Map<string, number>();
    for (const entry of readJournal(journal)) {
      if (entry.phase === 'received') received.set(String(entry.args?.to), (received.get(String(entry.args?.to)) ?? 0) + 1);
    }
    expect([...received].filter(([, count]) => count > 1)).toEqual([]);
    const ambiguous = answers.filter(({ result }) => outcomeOf(result) === 'ambiguous');
    for (const { to, result } of answers) {
      if (outcomeOf(result) === 'ambiguous') {
        expect(textOf(result)).toMatch(/^Whether this op_nondestructive call ran is unknown/);
      } else {
        // A result says the upstream sent it (run, or replayed when its worker died after recording it), and the upstream says so too.
        expect(textOf(result)).toBe(`sent to ${to}`);
        expect(['executed', 'replayed']).toContain(outcomeOf(result));
        expect(received.get(to)).toBe(1);
      }
    }
    console.log(
      `[chaos] ${answers.length} calls in ${Math.round(callsMs)} ms, ${kills} worker kills; ${answers.length - ambiguous.length} ran, ${ambiguous.length} answered as unknown`,
    );
  }, 120_000);
});
