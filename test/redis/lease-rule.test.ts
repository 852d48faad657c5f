/**
 * The lease has one rule: `leaseOption` in src/redis/options.ts. The option
 * of a keyspace, a claim's, a heartbeat's and a takeover's lease per call and
 * the gateway's worker setting all answer to it, so a lease one place refuses
 * (a fraction, zero, one past the longest Node timer) no other place takes.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineTool, withToolReceipts } from '../../src/bullmq/index.js';
import { MAX_TIMER_MS } from '../../src/core/options.js';
import { ReceiptStore } from '../../src/redis/index.js';
import { ReconcileStore } from '../../src/redis/receipts/transitions/reconcile-store.js';
import { freshKey, useRedis } from '../support/redis-fixture.js';

const fixture = useRedis();
const lazy = new Redis({ lazyConnect: true });
afterAll(() => lazy.disconnect());

const REFUSED = [0, 1.5, -1, MAX_TIMER_MS + 1];
const tools = [defineTool({ name: 'send', input: z.object({}), effect: 'opaque', destructive: false, execute: async () => 'sent' })];

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const file = path.join(dir, name);
    return statSync(file).isDirectory() ? sourceFiles(file) : file.endsWith('.ts') ? [file] : [];
  });
}

describe('the lease rule', () => {
  it('is written once: no other source checks a lease with a rule of its own', () => {
    const rules = sourceFiles(path.resolve('src')).flatMap((file) =>
      readFileSync(file, 'utf8')
        .split('\n')
        .filter((line) => /lease\w*\s*[:=(,].*\b(wholeNumber|positiveInt|Number\.isSafeInteger|Number\.isInteger)\(/i.test(line))
        .map((line) => `${path.relative('src', file)}: ${line.trim()}`),
    );
    expect(rules).toEqual(["redis/options.ts: export const leaseOption: OptionRule = wholeNumber(1, 'ms', MAX_TIMER_MS);"]);
  });

  it.each(REFUSED)('refuses %s alike as an option and per call, before anything is sent', async (leaseMs) => {
    expect(() => withToolReceipts({ redis: lazy, tools, leaseMs } as never)).toThrow(
      expect.objectContaining({
        code: 'options.invalid',
        message: expect.stringMatching(/`leaseMs` must be a whole number of ms, from 1 to 2147483647/),
      }),
    );
    expect(() => new ReceiptStore({ redis: lazy, leaseMs } as never)).toThrow(expect.objectContaining({ code: 'options.invalid' }));

    const store = fixture.store();
    const key = freshKey();
    const perCall = expect.objectContaining({
      code: 'receipt.invalid_input',
      message: expect.stringMatching(/`leaseMs` must be a whole number of ms, from 1 to 2147483647/),
    });
    await expect(store.claim(key, { effect: 'opaque', leaseMs })).rejects.toThrow(perCall);
    expect(await store.inspect(key)).toBeNull();
    const { fence } = await store.claim(key, { effect: 'opaque', leaseMs: 60_000 });
    await expect(store.heartbeat(key, fence!, leaseMs)).rejects.toThrow(perCall);
    const reconciles = new ReconcileStore({ redis: fixture.client(), prefix: store.prefix });
    await expect(reconciles.begin(key, fence!, leaseMs, 'w1')).rejects.toThrow(perCall);
    // The live attempt is untouched by the refusals: its lease is still the one it claimed.
    expect((await store.inspect(key))!.status).toBe('running');
  });

  it('takes the longest lease a Node timer honours', async () => {
    const store = fixture.store();
    const key = freshKey();
    const { fence } = await store.claim(key, { effect: 'opaque', leaseMs: MAX_TIMER_MS });
    const beat = await store.heartbeat(key, fence!, MAX_TIMER_MS);
    const seen = (await store.inspect(key))!;
    expect(beat.leaseUntilMs - seen.readAtMs).toBeGreaterThan(MAX_TIMER_MS - 60_000);
  });
});
