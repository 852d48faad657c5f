/**
 * Every ReceiptStore method that takes a call's names refuses a name that is
 * not well-formed Unicode with the typed error, before anything reaches
 * Redis: such a name would be stored as U+FFFD and read back as another one.
 */
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { MalformedNameError } from '../../src/core/identity.js';
import type { ToolCallReceiptKey } from '../../src/core/identity.js';
import type { ReceiptStore } from '../../src/redis/receipts/store.js';
import { ReconcileStore } from '../../src/redis/receipts/transitions/reconcile-store.js';
import { freshKey, useRedis } from '../support/redis-fixture.js';

const fixture = useRedis();
const LONE = '\uD800';
const fence = { attempt: 1, epoch: 'e' };

const calls: [string, (store: ReceiptStore, key: ToolCallReceiptKey) => Promise<unknown>][] = [
  ['claim', (s, k) => s.claim(k, { effect: 'opaque' })],
  ['complete', (s, k) => s.complete(k, fence, { ok: true })],
  ['fail', (s, k) => s.fail(k, fence, { error: 'boom' })],
  ['markOutcomeUnknown', (s, k) => s.markOutcomeUnknown(k, fence, 'timeout')],
  ['heartbeat', (s, k) => s.heartbeat(k, fence)],
  ['recordStep', (s, k) => s.recordStep(k, fence, 'step', 1)],
  ['flagAmbiguous', (s, k) => s.flagAmbiguous(k, fence, 'opaque')],
  ['resolve', (s, k) => s.resolve(k, { outcome: 'failed', error: 'not sent', attemptsSeen: 1 })],
  ['inspect', (s, k) => s.inspect(k)],
  ['steps', (s, k) => s.steps(k)],
  ['listRun', (s, k) => s.listRun(k.tenantId, k.runId)],
  ['ReconcileStore.begin', (s, k) => reconciles(s).begin(k, fence, 1_000, 'w')],
  ['ReconcileStore.settle', (s, k) => reconciles(s).settle(k, { ...fence, reconciles: 1, worker: 'w' }, { verdict: 'unknown', note: 'n' })],
  ['ReconcileStore.noteJob', (s, k) => reconciles(s).noteJob(k, { queue: 'q', prefix: 'bull', id: '1' })],
  [
    'ReconcileStore.reclaimKeyed',
    (s, k) => reconciles(s).reclaimKeyed(k, { lost: fence, keyWindowMs: 60_000, leaseMs: 1_000, owner: 'w' }),
  ],
];

/** A reconcile store on the same connection and prefix as `store`. */
const reconciles = (store: ReceiptStore): ReconcileStore => new ReconcileStore({ redis: fixture.connect(), prefix: store.prefix });

async function keysUnder(prefix: string): Promise<string[]> {
  return fixture.connect().keys(`${prefix}*`);
}

describe.each(['tenantId', 'runId', 'toolName', 'argsHash'] as const)('a %s with a lone surrogate', (field) => {
  // listRun takes no tool name or args hash.
  const applicable = calls.filter(([name]) => name !== 'listRun' || field === 'tenantId' || field === 'runId');
  it.each(applicable)('%s throws MalformedNameError and writes nothing', async (_name, call) => {
    const prefix = `mn${randomBytes(4).toString('hex')}`;
    const store = fixture.store({ prefix });
    const key = freshKey({ [field]: `bad${LONE}name` });
    const error = await call(store, key).then(
      () => null,
      (err: unknown) => err,
    );
    expect(error).toBeInstanceOf(MalformedNameError);
    expect(error).toMatchObject({ code: 'identity.malformed_name' });
    expect(await keysUnder(prefix)).toEqual([]);
  });
});

it('recordStep refuses a step name with a lone surrogate and records no step', async () => {
  const store = fixture.store();
  const key = freshKey();
  const claim = await store.claim(key, { effect: 'resumable', leaseMs: 10_000 });
  await expect(store.recordStep(key, claim.fence!, `step${LONE}`, 1)).rejects.toMatchObject({ code: 'identity.malformed_name' });
  expect(await store.steps(key)).toEqual({});
});
