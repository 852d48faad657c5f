/**
 * The loss a failover causes, made deterministic, and its fix. The replica is
 * SIGSTOPped and its link dropped, so nothing the first worker writes reaches it; the primary is
 * SIGKILLed; the replica comes back and the sentinels promote it. BullMQ's
 * own state is lost with the primary too, so the job is delivered again.
 * Without durability the promoted replica has no claim and the effect runs a
 * second time; with `durability: { replicas: 1 }` the first worker never
 * starts the effect, and the call runs exactly once after the failover.
 */
import { Queue } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DurabilityOptions } from '../../src/redis/index.js';
import { SENTINEL_MASTER_NAME, sentinelSkipReason, startSentinelSet, type SentinelSetHandle } from '../support/redis-sentinel.js';
import { runCli } from '../../src/cli/cli.js';
import { Capture } from '../cli/support.js';
import { Outbox, failoverWorker, sendEmailTool } from './support.js';

const skip = sentinelSkipReason();

describe.skipIf(skip !== undefined)('a failover to a replica that missed the claim', () => {
  let set: SentinelSetHandle;
  beforeAll(async () => {
    set = await startSentinelSet();
  });
  afterAll(async () => {
    await set?.stop();
  });

  async function scenario(durability: DurabilityOptions | undefined) {
    const outbox = new Outbox();
    const effects = outbox.effects;
    const queueName = `failover${durability ? 'on' : 'off'}`;
    const queue = new Queue(queueName, { connection: set.connect({ maxRetriesPerRequest: null }), prefix: set.prefix });
    queue.on('error', () => undefined);
    const primary = await set.master();
    const replica = set.replicaOf(primary);
    const job = await queue.add(
      'call',
      { tenantId: 'acme', runId: `run-${queueName}`, calls: [{ id: 'toolu_1', name: 'send_email', input: { to: 'a@example.com' } }] },
      { attempts: 40, backoff: { type: 'fixed', delay: 100 } },
    );
    await set.waitForSync(primary, replica); // the job itself is on both
    await set.cutOff(replica);

    const worker = (name: string) =>
      failoverWorker(set.connect, queueName, { name, tools: [sendEmailTool(outbox, name)], durability, prefix: set.prefix });
    const first = worker('first');
    const outcome = await first.next();
    if (durability) {
      // The claim was not acknowledged: the attempt was settled as never started, and the effect did not run.
      expect(outcome.kind).toBe('failed');
      expect(outcome.error).toMatch(/^durability\.not_acknowledged claim of /);
      expect(effects).toEqual([]);
    } else {
      expect(outcome.kind).toBe('completed');
      expect(effects).toEqual(['first']);
    }

    await primary.kill();
    await first.close();
    await replica.resume();
    await set.waitForMaster(replica);
    await set.rejoin(primary); // back empty, as the new master's replica

    const second = worker('second');
    const after = await second.until((o) => o.kind === 'completed' && o.jobId === job.id);
    expect(after.kind).toBe('completed');
    await second.close();
    await queue.close();
    return effects;
  }

  it('the CLI finds the master through the sentinels', async () => {
    const sentinels = set.sentinels.map((s) => `${s.host}:${s.port}`).join(',');
    const run = async (...args: string[]) => {
      const stdout = new Capture();
      const stderr = new Capture();
      const code = await runCli([...args, '--sentinels', sentinels, '--name', SENTINEL_MASTER_NAME], { stdout, stderr, env: {} });
      return { code, out: stdout.text, err: stderr.text };
    };
    const doctor = await run('doctor', '--replicas', '1', '--json');
    const report = JSON.parse(doctor.out) as { findings: { check: string; status: string; message: string }[] };
    expect(report.findings.find((f) => f.check === 'replicas')).toMatchObject({ status: 'safe' });
    expect(doctor.code).toBe(1); // these servers run without an AOF
    expect(report.findings.find((f) => f.check === 'persistence')).toMatchObject({ status: 'at-risk' });
    expect((await run('ambiguous', '--prefix', set.prefix)).code).toBe(0);
    const lone = await runCli(['ambiguous', '--sentinels', sentinels], { stdout: new Capture(), stderr: new Capture(), env: {} });
    expect(lone).toBe(2); // --sentinels without --name is a usage error
  });

  it('without durability, the effect runs twice (the loss this mode exists for)', async () => {
    expect(await scenario(undefined)).toEqual(['first', 'second']);
  });

  it('with durability { replicas: 1 }, the first worker never starts the effect and the call runs once', async () => {
    expect(await scenario({ replicas: 1, timeoutMs: 300 })).toEqual(['second']);
  });
});
