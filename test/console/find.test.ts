/**
 * Find against the real handler with whatever text an operator might paste:
 * anything (text with empty parts between colons, keys of BullMQ's own
 * streams, lists and counters, control characters, very long text) gets a
 * clean 200 or 400, never a 500; and the reading of `<prefix>:<queue>:<id>`
 * never yields an empty part.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import fc from 'fast-check';
import { Queue } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createConsoleHandler } from '../../src/console/index.js';
import { parseJobKey } from '../../src/console/find-jobs.js';
import { makeAmbiguous } from '../cli/support.js';
import { freshKey, useRedis } from '../support/redis-fixture.js';

const fixture = useRedis();
const errors: unknown[] = [];
let server: Server;
let origin: string;
let prefix: string;
let queue: Queue;

beforeAll(async () => {
  prefix = `${fixture.handle().prefix}find`;
  const store = fixture.store({ prefix });
  // A receipt that needs a person, so the tool and call-id lookups read something.
  await makeAmbiguous(store, freshKey({ tenantId: 'acme', runId: 'run-1' }));
  // A queue with a job: its events stream, id counter, wait list and meta hash are keys a paste can name.
  queue = new Queue('tools', { connection: fixture.connect(), prefix });
  await queue.add('call', { tenantId: 'acme', runId: 'run-1', calls: [{ id: 'toolu_1', name: 'send_email', input: {} }] });
  const handler = createConsoleHandler({
    redis: fixture.connect(),
    prefix,
    queues: [{ name: 'tools', prefix }],
    onError: (err) => errors.push(err),
  });
  server = createServer(handler);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await queue?.close();
  await new Promise((r) => (server.closeAllConnections(), server.close(r)));
});

async function findStatus(q: string): Promise<{ status: number; body: string }> {
  const res = await fetch(`${origin}/find?${new URLSearchParams({ q })}`);
  return { status: res.status, body: await res.text() };
}

/** A clean answer: a page that found something, found nothing, or refused the text; never a 500, never an error logged. */
function expectClean(q: string, answer: { status: number; body: string }): void {
  expect({ q, status: answer.status }).toEqual({ q, status: answer.status === 400 ? 400 : 200 });
  expect(answer.body).toContain('<h1>Find</h1>');
  if (answer.status === 400) expect(answer.body).toContain('class="banner error"');
}

describe('find with pasted text', () => {
  it('answers 200 or 400 for text with empty parts, BullMQ keys that are not jobs, control characters and long text', async () => {
    const texts = [
      'x::1',
      'bull::1',
      'fe80::1',
      '::',
      ':',
      'a:b:',
      ':a:b',
      'a::',
      ':::',
      `${prefix}::1`,
      `${prefix}:tools:`,
      `${prefix}:tools:events`,
      `${prefix}:tools:id`,
      `${prefix}:tools:wait`,
      `${prefix}:tools:meta`,
      `${prefix}:count:{acme|run-1}`,
      `${prefix}:rcpt:{a|b}:c`,
      '\u0000\u0001\u001f:\u007f:\u0000',
      '🙂:队列:ид',
      '\u202e:\ufeff:\u200b',
      'a'.repeat(6_000),
      'x:'.repeat(2_000),
    ];
    for (const q of texts) expectClean(q, await findStatus(q));
    expect(await findStatus('x::1')).toMatchObject({ status: 200, body: expect.stringContaining('Nothing found for') });
    expect(errors).toEqual([]);
  });

  it('answers 200 or 400 for any text (property, against the real handler)', async () => {
    const text = fc.oneof(
      fc.string({ maxLength: 200 }),
      fc.string({ unit: 'binary', maxLength: 200 }),
      // Mostly colons and short parts: the shapes a job key is read from.
      fc
        .array(fc.oneof(fc.constant(':'), fc.constant(''), fc.constant(prefix), fc.constant('tools'), fc.string({ maxLength: 4 })), {
          maxLength: 8,
        })
        .map((parts) => parts.join(':')),
    );
    await fc.assert(
      fc.asyncProperty(text, async (q) => {
        expectClean(q, await findStatus(q));
      }),
      { numRuns: 150 },
    );
    expect(errors).toEqual([]);
  });
});

describe('parseJobKey', () => {
  it('reads <prefix>:<queue>:<id> from the right, every part non-empty, or nothing', () => {
    const part = fc.string({ minLength: 1, maxLength: 12 }).filter((s) => !s.includes(':'));
    fc.assert(
      fc.property(fc.string({ minLength: 1, maxLength: 20 }), part, part, (p, queue, id) => {
        expect(parseJobKey(`${p}:${queue}:${id}`)).toEqual({ prefix: p, queue, id });
      }),
    );
    fc.assert(
      fc.property(
        fc.string({ maxLength: 30 }).map((s) => s.replace(/[a-c]/g, ':')),
        (q) => {
          const parsed = parseJobKey(q);
          if (parsed === undefined) return;
          expect(parsed.prefix).not.toBe('');
          expect(parsed.queue).not.toBe('');
          expect(parsed.id).not.toBe('');
          expect(`${parsed.prefix}:${parsed.queue}:${parsed.id}`).toBe(q);
          expect(`${parsed.queue}${parsed.id}`).not.toContain(':');
        },
      ),
    );
    for (const q of ['x::1', 'bull::1', 'fe80::1', '::', 'a:b:', ':a:b', 'a:b']) expect(parseJobKey(q)).toBeUndefined();
  });
});
