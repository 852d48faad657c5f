import { describe, expect, it } from 'vitest';
import { pino } from 'pino';
import { z } from 'zod';
import { DestructiveRanError } from '../../src/core/index.js';
import { OFFLOAD_TOOL_NAME, RedisToolResultStore } from '../../src/offload/index.js';
import { defineTool, type ToolJobResult } from '../../src/bullmq/index.js';
import { call, jobData, useLanes } from './fixture.js';

const lane = useLanes();
const results = (job: { returnvalue: unknown }) => (job.returnvalue as ToolJobResult).results;

describe('read-only tools', () => {
  it('run without a receipt, every time, and log the decision as direct', async () => {
    const l = await lane();
    let runs = 0;
    const flags = [{ readOnly: true }, { annotations: { readOnlyHint: true } }] as const;
    const [lookup, search] = flags.map((f, i) =>
      defineTool({ name: `lookup_${i}`, input: z.object({ q: z.string() }), effect: 'opaque', ...f, execute: (a) => `${a.q} #${++runs}` }),
    );
    const lines: Array<Record<string, unknown>> = [];
    const logger = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line)) });
    const { processor } = l.worker({ tools: [lookup!, search!], logger });
    const data = jobData([call('lookup_0', { q: 'a' }), call('lookup_1', { q: 'b' })]);
    const first = await l.run(data);
    const second = await l.run({ ...data, calls: [call('lookup_0', { q: 'a' })] });
    expect(results(first).map((r) => [r.outcome, r.content])).toEqual([
      ['executed', 'a #1'],
      ['executed', 'b #2'],
    ]);
    expect(results(second)[0]).toMatchObject({ outcome: 'executed', content: 'a #3' }); // never replayed
    expect(await l.redis.keys(`${l.prefix}:rcpt:*`)).toEqual([]);
    expect(await processor.store.listRun(data.tenantId, data.runId)).toEqual([]);
    const decisions = lines.filter((x) => x.msg === 'tool call');
    expect(decisions.map((d) => [d.tool, d.decision, d.outcome])).toEqual([
      ['lookup_0', 'direct', 'executed'],
      ['lookup_1', 'direct', 'executed'],
      ['lookup_0', 'direct', 'executed'],
    ]);
  });
  it('take a receipt after all when the deployment names them destructive', async () => {
    const l = await lane();
    const peek = defineTool({ name: 'git_show', input: z.object({}), effect: 'opaque', readOnly: true, execute: () => 'shown' });
    l.worker({ tools: [peek], destructiveTools: ['git_*'] });
    const data = jobData([call('git_show', {})]);
    await l.run(data);
    expect((await l.receipt(data.tenantId, data.runId)).status).toBe('completed');
    expect(results(await l.run(data))[0]!.outcome).toBe('replayed');
  });
});

describe('read-only tools that fail', () => {
  it('retry the job on a plain error, as an idempotent tool would: rerunning a read changes nothing', async () => {
    const l = await lane();
    let runs = 0;
    const lookup = defineTool({
      name: 'lookup',
      input: z.object({}),
      effect: 'opaque',
      readOnly: true,
      execute: () => {
        if (++runs === 1) throw new Error('index busy');
        return 'found';
      },
    });
    l.worker({ tools: [lookup] });
    const job = await l.run(jobData([call('lookup', {})]), { attempts: 2 });
    expect(results(job)[0]).toMatchObject({ outcome: 'executed', content: 'found' });
    expect(runs).toBe(2);
  });
  it('are not retried and promise no removal when they claim a destructive operation ran', async () => {
    const l = await lane();
    let runs = 0;
    const peek = defineTool({
      name: 'peek',
      input: z.object({}),
      effect: 'opaque',
      readOnly: true,
      execute: () => {
        runs++;
        throw new DestructiveRanError('wrote after all');
      },
    });
    l.worker({ tools: [peek] });
    const job = await l.run(jobData([call('peek', {})]), { attempts: 3 });
    expect(runs).toBe(1);
    const [result] = results(job);
    expect(result).toMatchObject({ outcome: 'failed', is_error: true });
    expect(result!.content).toContain('wrote after all');
    expect(result!.content).not.toContain('removed');
  });
});

describe('ReadToolResult across tenants and sessions', () => {
  it("reads only the job's own tenant and session, and refuses others exactly like an unknown ref", async () => {
    const l = await lane();
    const dump = defineTool({
      name: 'dump',
      input: z.object({}),
      effect: 'opaque',
      destructive: false,
      execute: () => 'secret '.repeat(10_000),
    });
    l.worker({ tools: [dump], resultStore: new RedisToolResultStore({ redis: l.redis, prefix: l.prefix }), offloadThresholdChars: 1000 });
    const owner = { tenantId: 'tenant-a', runId: 'run-a' };
    const stored = await l.run({ ...jobData([call('dump', {})], owner), sessionId: 'sess-a' });
    const ref = /ref="([^"]+)"/.exec(results(stored)[0]!.content)![1]!;
    const read = async (ids: { tenantId: string; runId: string }, sessionId: string, wanted = ref) =>
      results(await l.run({ ...jobData([call(OFFLOAD_TOOL_NAME, { ref: wanted }, 'toolu_read')], ids), sessionId }))[0]!;

    const own = await read({ tenantId: 'tenant-a', runId: 'run-a2' }, 'sess-a');
    expect(own).toMatchObject({ outcome: 'executed' });
    expect(own.content).toContain('secret secret');

    const otherSession = await read({ tenantId: 'tenant-b', runId: 'run-b' }, 'sess-b');
    const otherTenant = await read({ tenantId: 'tenant-b', runId: 'run-b' }, 'sess-a');
    const unknown = await read({ tenantId: 'tenant-b', runId: 'run-b' }, 'sess-b', `${ref.slice(0, -4)}zzzz`);
    for (const refused of [otherSession, otherTenant]) {
      expect(refused).toMatchObject({ outcome: 'rejected', is_error: true });
      expect(refused.content).not.toContain('secret');
      // Same answer as for a ref that does not exist, apart from the ref the model itself sent.
      expect(refused.content).toBe(unknown.content.replace(`${ref.slice(0, -4)}zzzz`, ref));
    }
  });
});
