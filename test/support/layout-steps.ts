/**
 * What the rolling deploys between receipt layouts check beyond the fleet
 * (test/support/rolling-deploy.ts): each receipt's layout as stored, read
 * after each step of a deploy, so a test can check that no receipt changed
 * layout whichever worker wrote it later; a fleet rolled over to another kind
 * of worker one SIGKILL at a time; and a frozen call taken over by another
 * kind, keeping its receipt's layout.
 */
import { expect } from 'vitest';
import { readOutbox } from '../../examples/outbox-tools.js';
import { toolCallArgsHash } from '../../src/core/index.js';
import { waitUntil } from './redis-fixture.js';
import { STEP_TIMEOUT_MS, type Fleet, type WorkerKind } from './rolling-deploy.js';

/** A receipt key's batch: the letter of its run (`run-<batch>-<n>`, see `turn`). */
const batchOf = (redisKey: string) => /\|run-([a-z])-\d\}/.exec(redisKey)?.[1] ?? '?';

/** Layout expectations of {@link layoutSteps}' `expectKept`. */
export interface LayoutExpectations {
  /** By step: the layouts a receipt first read at that step can have (those the workers running since the step before write). */
  readonly steps: Readonly<Record<string, readonly string[]>>;
  /** By batch: the layouts its receipts can have, for batches that one kind of worker ran alone. */
  readonly batches: Readonly<Record<string, readonly string[]>>;
  /** Receipt keys left out of `batches` (a frozen call's turn, which another kind finished). */
  readonly held: ReadonlySet<string>;
}

/** The layout helpers of one fleet; see the file's comment. */
export function layoutSteps(deploy: Fleet, prefix: string) {
  const { redis, store, turns, fleet, flowing, replace } = deploy;
  /** Each receipt's layout as stored (its `schema` field, '1' without one), found by SCAN, not by a store. */
  const layouts = async () => {
    const found = new Map<string, string>();
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}:rcpt:{*`, 'COUNT', 1000);
      cursor = next;
      for (const key of keys) found.set(key, (await redis.hget(key, 'schema')) ?? '1');
    } while (cursor !== '0');
    return found;
  };
  /** Layouts read after each step, in order. */
  const steps: { step: string; layouts: Map<string, string> }[] = [];
  /** Reads every receipt's layout after `step`, and returns them. */
  const settled = async (step: string) => {
    const seen = await layouts();
    steps.push({ step, layouts: seen });
    return seen;
  };
  /**
   * Checks that each receipt kept its layout from one step to the next, and
   * that each has a layout its step and batch allow; returns the last step's.
   */
  const expectKept = (expected: LayoutExpectations) => {
    let before = new Map<string, string>();
    for (const { step, layouts: seen } of steps) {
      for (const [key, layout] of before) expect(seen.get(key), `${key} at ${step}`).toBe(layout);
      for (const [key, layout] of seen) {
        if (before.has(key)) continue;
        expect(expected.steps[step], `${key}, first read at ${step}`).toContain(layout);
        const only = expected.batches[batchOf(key)];
        if (only && !expected.held.has(key)) expect(only, key).toContain(layout);
      }
      before = seen;
    }
    return before;
  };
  /** The turn holding a call, the call's receipt key and its Redis key. */
  const callOf = async (callId: string) => {
    const data = [...turns.values()].find((t) => t.calls.some((c) => c.id === callId))!;
    const call = data.calls.find((c) => c.id === callId)!;
    const key = { tenantId: data.tenantId, runId: data.runId, toolName: call.name, argsHash: await toolCallArgsHash(call.input) };
    return { data, key, redisKey: store.redisKey(key) };
  };
  /** Rolls the fleet over to `kind`, one SIGKILLed worker at a time while jobs flow; the slots in `last` go last. */
  const rollTo = async (kind: WorkerKind, last: readonly number[] = []) => {
    const order = [...fleet.keys()].filter((slot) => !last.includes(slot)).concat(last);
    for (const slot of order) {
      await flowing(`jobs to flow before slot ${slot} turns ${kind}`);
      await replace(slot, kind);
    }
  };
  /**
   * Waits until a worker of kind `after` has taken over a create_ticket call
   * a worker of kind `before` froze in (its recorded steps kept, its last one
   * run), and checks that its receipt kept layout `layout`; returns the record.
   */
  const expectTakenOver = async (
    call: Awaited<ReturnType<typeof callOf>>,
    idempotencyKey: string,
    layout: number,
    [before, after]: readonly [WorkerKind, WorkerKind],
  ) => {
    const record = await waitUntil(
      () => store.inspect(call.key),
      (r) => r?.status === 'completed',
      STEP_TIMEOUT_MS,
      `a ${after} worker to take the frozen ticket over`,
    );
    expect(record).toMatchObject({ key: call.key, attempts: 2, schema: layout });
    const parts = (await readOutbox(redis, prefix)).filter((e) => e.idempotencyKey === idempotencyKey);
    expect(parts.map((e) => [e.part, (e as { release?: string }).release])).toEqual([
      ['reserve', before],
      ['create', before],
      ['notify', after],
    ]);
    return record!;
  };
  return { layouts, settled, expectKept, callOf, rollTo, expectTakenOver };
}
