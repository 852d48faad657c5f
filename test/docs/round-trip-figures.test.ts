/**
 * The round-trip figures the docs state, kept in step with what the code
 * sends. The tables under "Round trips" in docs/performance.md are read and
 * each line is run against Redis: ours through a BullMQ worker whose
 * receipts connection is recorded (a command is a round trip, a group
 * commit batch one), the peer through Powertools' `makeIdempotent` as the
 * bench runs it, the `WAIT`s on a primary with a replica. Then every mention
 * of a round trip in the README and docs must be one listed here: a figure,
 * checked against its table line, or said why it counts nothing of ours.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { peerIdempotent } from '../../bench/peer.js';
import { defineTool, withToolReceipts, type ToolReceiptsOptions } from '../../src/bullmq/index.js';
import { ReceiptStore } from '../../src/redis/index.js';
import { testJob } from '../../src/testing/index.js';
import { call, jobData, silent, useLanes } from '../bullmq/fixture.js';
import { startPrimaryWithReplica } from '../support/redis-cluster.js';
import { findOnPath, type LocalRedis } from '../support/redis-process.js';
import { uniquePrefix } from '../support/redis.js';
import { recordCommands } from '../support/sent-commands.js';
import { DOCS, MENTIONS, asFigure } from './round-trip-mentions.js';

const lane = useLanes();
const closers: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close().catch(() => undefined);
});

/** The tables of the "Round trips" section: line name → cells after it, per table. */
function roundTripTables(): Map<string, string[]>[] {
  const text = readFileSync(new URL('../../docs/performance.md', import.meta.url), 'utf8');
  const section = /\n## Round trips\n([\s\S]*?)\n## /.exec(text)?.[1] ?? '';
  return section
    .split(/\n\n+/)
    .filter((block) => block.startsWith('|'))
    .map((block) => {
      const rows = block
        .split('\n')
        .filter((line) => line.startsWith('|'))
        .slice(2)
        .map((line) =>
          line
            .split('|')
            .slice(1, -1)
            .map((cell) => cell.trim()),
        );
      return new Map(rows.map(([name, ...cells]) => [name!, cells]));
    });
}

const [CALLS = new Map(), WAITS = new Map()] = roundTripTables();

/**
 * The tools of the counted jobs; `send_email` takes `delayMs` so calls side
 * by side (a job whose data says `parallel: true`) can finish apart.
 */
function tools() {
  const lookup = defineTool({
    name: 'lookup',
    input: z.object({ q: z.string() }),
    effect: 'opaque',
    readOnly: true,
    execute: ({ q }) => q,
  });
  const send = defineTool({
    name: 'send_email',
    input: z.object({ to: z.string(), delayMs: z.number().optional() }),
    effect: 'opaque',
    destructive: false,
    execute: async ({ to, delayMs }) => {
      if (delayMs) await new Promise((r) => setTimeout(r, delayMs));
      return `sent to ${to}`;
    },
  });
  return [lookup, send];
}

const emails = (n: number, delays: readonly number[] = []) =>
  Array.from({ length: n }, (_, i) =>
    call('send_email', { to: `${randomBytes(4).toString('hex')}@x.test`, ...(delays[i] ? { delayMs: delays[i] } : {}) }),
  );

/** Our counts: a worker on a recorded connection of its own, the scripts cached and the run registered first. */
async function ours() {
  const l = await lane();
  const connection = l.redis.duplicate();
  closers.push(async () => connection.disconnect());
  const processor = withToolReceipts({ logger: silent, tools: tools(), redis: connection, prefix: l.prefix });
  const worker = new Worker(l.queueName, processor, { connection: l.redis.duplicate(), prefix: l.prefix });
  worker.on('error', () => undefined);
  closers.push(() => worker.close(true));
  const ids = { runId: `run-${randomBytes(4).toString('hex')}` };
  await l.run({ ...jobData(emails(3), ids), parallel: true });
  await l.run(jobData(emails(2), ids));
  const sent = recordCommands(connection);
  const count = async (data: object) => {
    sent.take();
    const job = await l.run(data);
    expect(job.failedReason).toBeUndefined();
    return sent.take().length;
  };
  return {
    turn: async (k: number) => {
      const turn = jobData(emails(k), ids);
      return { executed: await count(turn), replayed: await count(jobData(turn.calls, ids)) };
    },
    readOnly: () => count(jobData([call('lookup', { q: 'a' })], ids)),
    sideBySide: (delays: readonly number[]) => count({ ...jobData(emails(3, delays), ids), parallel: true }),
    /** Through the store alone: each call claimed, then completed, on its own. */
    unfused: async (k: number) => {
      const store = new ReceiptStore({ redis: connection, prefix: l.prefix });
      const claimAndComplete = async () => {
        const key = { tenantId: 'acme', runId: ids.runId, toolName: 'send_email', argsHash: randomBytes(8).toString('hex') };
        await store.complete(key, (await store.claim(key, { effect: 'opaque' })).fence!, 'sent');
      };
      await claimAndComplete(); // this store registers the run first
      sent.take();
      for (let i = 0; i < k; i++) await claimAndComplete();
      return sent.take().length;
    },
  };
}

/** The peer's counts: a turn of k calls through `makeIdempotent`, then the same calls again. */
async function peerTurn(k: number): Promise<{ executed: number; replayed: number }> {
  const l = await lane();
  const connection = l.redis.duplicate();
  closers.push(async () => connection.disconnect());
  await connection.ping();
  const idempotent = peerIdempotent(connection, `${l.prefix}:peer`, { retentionSeconds: 600, leaseMs: 30_000 }, (c) => `ran ${c.name}`);
  const calls = Array.from({ length: k }, () => ({
    tenantId: 'acme',
    runId: 'run',
    name: 'send_email',
    input: { to: randomBytes(4).toString('hex') },
  }));
  const sent = recordCommands(connection);
  for (const c of calls) await idempotent(c);
  const executed = sent.take().length;
  for (const c of calls) await idempotent(c);
  return { executed, replayed: sent.take().length };
}

/** A table cell as a number, or for a line over k calls, its value at `k`. */
function cellAt(cell: string | undefined, k: number): number | undefined {
  if (cell === undefined || cell === '') return undefined;
  if (cell === 'k + 1') return k + 1;
  if (cell === '2k') return 2 * k;
  const n = asFigure(cell);
  if (n === undefined) throw new Error(`round-trip table cell ${JSON.stringify(cell)} is neither a number nor a formula this test knows`);
  return n;
}

describe('the round-trip tables in docs/performance.md', () => {
  it('hold a line for every scenario this test runs, and only those', () => {
    expect([...CALLS.keys()]).toEqual([
      'one call, executed',
      'one call, replayed',
      'one read-only call',
      'a turn of k calls one after another, executed',
      'a three-call turn one after another, executed',
      'a three-call turn one after another, replayed',
      'a three-call turn through the store, each call claimed and completed on its own',
      'three calls side by side, finishing together',
      'three calls side by side, finishing one at a time',
    ]);
    expect([...WAITS.keys()]).toEqual(['one call, executed', 'one call, replayed', 'a three-call turn one after another, executed']);
  });

  it('say what our worker sends', async () => {
    const o = await ours();
    const turns = [await o.turn(1), await o.turn(2), await o.turn(3)];
    const measured: Record<string, number | number[]> = {
      'one call, executed': turns[0]!.executed,
      'one call, replayed': turns[0]!.replayed,
      'one read-only call': await o.readOnly(),
      'a turn of k calls one after another, executed': turns.map((t) => t.executed),
      'a three-call turn one after another, executed': turns[2]!.executed,
      'a three-call turn one after another, replayed': turns[2]!.replayed,
      'a three-call turn through the store, each call claimed and completed on its own': await o.unfused(3),
      'three calls side by side, finishing together': await o.sideBySide([]),
      'three calls side by side, finishing one at a time': await o.sideBySide([0, 60, 120]),
    };
    for (const [name, value] of Object.entries(measured)) {
      const cell = CALLS.get(name)?.[0];
      const stated = Array.isArray(value) ? value.map((_, i) => cellAt(cell, i + 1)) : cellAt(cell, 3);
      expect({ name, sent: value }).toEqual({ name, sent: stated });
    }
  });

  it('say what the peer sends', async () => {
    const turns = [await peerTurn(1), await peerTurn(2), await peerTurn(3)];
    const stated = (name: string, k: number) => cellAt(CALLS.get(name)?.[1], k);
    expect(turns[0]).toEqual({ executed: stated('one call, executed', 1), replayed: stated('one call, replayed', 1) });
    expect(turns.map((t) => t.executed)).toEqual([1, 2, 3].map((k) => stated('a turn of k calls one after another, executed', k)));
    expect(turns[2]).toEqual({
      executed: stated('a three-call turn one after another, executed', 3),
      replayed: stated('a three-call turn one after another, replayed', 3),
    });
  });
});

describe.skipIf(findOnPath('redis-server') === undefined)('the WAITs with durability: { replicas: 1 }', () => {
  let primary: LocalRedis;
  let replica: LocalRedis;
  const prefix = uniquePrefix();
  beforeAll(async () => {
    ({ primary, replica } = await startPrimaryWithReplica(prefix));
  });
  afterAll(async () => {
    await replica?.stop();
    await primary?.stop();
  });

  it('are as the table says', async () => {
    const connection = new Redis(primary.url);
    closers.push(async () => connection.disconnect());
    const options: ToolReceiptsOptions = {
      redis: connection,
      prefix,
      tools: tools(),
      logger: silent,
      durability: { replicas: 1, timeoutMs: 5_000 },
    };
    const processor = withToolReceipts(options);
    const run = { tenantId: 'acme', runId: 'run-durable' };
    await processor(testJob({ ...run, calls: emails(2) }).job, 'token'); // scripts cached, run registered
    const sent = recordCommands(connection);
    const waits = async (calls: ReturnType<typeof emails>) => {
      sent.take();
      await processor(testJob({ ...run, calls }).job, 'token');
      return sent.take().filter((name) => name === 'wait').length;
    };
    const one = emails(1);
    expect(await waits(one)).toBe(cellAt(WAITS.get('one call, executed')?.[0], 1));
    expect(await waits(one)).toBe(cellAt(WAITS.get('one call, replayed')?.[0], 1));
    expect(await waits(emails(3))).toBe(cellAt(WAITS.get('a three-call turn one after another, executed')?.[0], 3));
  });
});

describe('every round-trip figure in the README and docs', () => {
  const text = (file: string) => readFileSync(new URL(`../../${file}`, import.meta.url), 'utf8').replace(/\s+/g, ' ');

  it.each(DOCS)("%s: each mention of a round trip is listed, and each listed figure is the table's", (file) => {
    const page = text(file);
    const mentions = MENTIONS.filter((m) => m.file === file);
    const spans = mentions.map((m) => {
      const at = page.indexOf(m.text);
      expect(at, `${file} no longer says: ${m.text}`).toBeGreaterThanOrEqual(0);
      return [at, at + m.text.length] as const;
    });
    for (const match of page.matchAll(/round[- ]trips?/gi)) {
      const covered = spans.some(([from, to]) => match.index >= from && match.index < to);
      expect(
        covered,
        `${file}: "…${page.slice(Math.max(0, match.index - 80), match.index + 30)}…" is a round-trip mention this test does not list`,
      ).toBe(true);
    }
    for (const m of mentions) {
      for (const figure of m.figures ?? []) {
        expect(m.text).toContain(figure.says);
        const table = figure.table === 'waits' ? WAITS : CALLS;
        const cell = table.get(figure.line)?.[figure.side === 'peer' ? 1 : 0];
        expect(cell, `${file}: no table line ${figure.line}`).toBeDefined();
        const ks = figure.k === undefined ? [1, 2, 3] : [figure.k];
        expect({ file, says: m.text, figure: ks.map((k) => cellAt(figure.says, k)) }).toEqual({
          file,
          says: m.text,
          figure: ks.map((k) => cellAt(cell, k)),
        });
      }
    }
  });
});
