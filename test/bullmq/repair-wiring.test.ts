import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { type Reshaper } from '../../src/repair/index.js';
import { defineTool, type ToolJobResult } from '../../src/bullmq/index.js';
import { waitUntil } from '../support/redis-fixture.js';
import { call, jobData, useLanes } from './fixture.js';

const lane = useLanes();
const first = (job: { returnvalue: unknown }) => (job.returnvalue as ToolJobResult).results[0]!;

function recordingTool(spec: { name?: string; destructive?: boolean } = {}) {
  const seen: unknown[] = [];
  const tool = defineTool({
    name: spec.name ?? 'create_issue',
    input: z.object({
      title: z.string(),
      labels: z.array(z.string()).default([]),
      meta: z.object({ priority: z.number() }).optional(),
      baseUrl: z.string().optional(),
      assignee: z.string().optional(),
    }),
    aliases: { baseUrl: ['url'] },
    effect: 'opaque',
    destructive: spec.destructive ?? false,
    execute(args) {
      seen.push(args);
      return `created ${args.title}`;
    },
  });
  return { tool, seen };
}

describe('input validation and repair before claiming', () => {
  it('decodes JSON-string objects and arrays, and one receipt serves both deliveries', async () => {
    const l = await lane();
    const t = recordingTool();
    const { processor } = l.worker({ tools: [t.tool] });
    const input = { title: 'Bug', labels: '["a","b"]', meta: '{"priority":2}' };
    const data = jobData([call('create_issue', input, 'toolu_1')]);
    const a = await l.run(data);
    const b = await l.run({ ...data, calls: [call('create_issue', input, 'toolu_2')] });
    expect(first(a).outcome).toBe('executed');
    expect(first(b).outcome).toBe('replayed');
    expect(t.seen).toEqual([{ title: 'Bug', labels: ['a', 'b'], meta: { priority: 2 } }]);
    expect(await processor.store.listRun(data.tenantId, data.runId)).toHaveLength(1);
    // The well-formed version of the same call is the same call.
    const c = await l.run({ ...data, calls: [call('create_issue', { title: 'Bug', labels: ['a', 'b'], meta: { priority: 2 } })] });
    expect(first(c).outcome).toBe('replayed');
  });

  it('drops null for optional fields, keeps it for required ones, and renames alias keys', async () => {
    const l = await lane();
    const t = recordingTool();
    l.worker({ tools: [t.tool] });
    const ok = await l.run(jobData([call('create_issue', { title: 'T', assignee: null, labels: null, url: 'https://x.test' })]));
    expect(first(ok).outcome).toBe('executed');
    expect(t.seen).toEqual([{ title: 'T', labels: [], baseUrl: 'https://x.test' }]);
    const bad = await l.run(jobData([call('create_issue', { title: null })]));
    expect(first(bad)).toMatchObject({ outcome: 'rejected', is_error: true });
    expect(first(bad).content).toContain('title');
    const conflict = await l.run(jobData([call('create_issue', { title: 'T', url: 'a', baseUrl: 'b' })]));
    expect(first(conflict).outcome).toBe('rejected');
    expect(first(conflict).content).toMatch(/baseUrl/);
    expect(t.seen).toHaveLength(1);
  });

  it('never executes a destructive tool with invalid input, and never asks the reshaper', async () => {
    const l = await lane();
    const t = recordingTool({ name: 'delete_repo', destructive: true });
    let reshaperCalls = 0;
    const reshaper: Reshaper = {
      async reshape(req) {
        reshaperCalls++;
        return req.message;
      },
    };
    const { processor } = l.worker({ tools: [t.tool], reshaper });
    const data = jobData([call('delete_repo', { title: 42 })]);
    const job = await l.run(data);
    expect(first(job)).toMatchObject({ outcome: 'rejected', is_error: true });
    expect(first(job).content).toMatch(/^Refused: delete_repo is destructive/);
    expect(reshaperCalls).toBe(0);
    expect(t.seen).toEqual([]);
    expect(await processor.store.listRun(data.tenantId, data.runId)).toEqual([]);
  });

  it('lets deployment patterns make a tool destructive whatever it declares', async () => {
    const l = await lane();
    const t = recordingTool({ name: 'git_push', destructive: false });
    let reshaperCalls = 0;
    const reshaper: Reshaper = { reshape: async (req) => (reshaperCalls++, req.message) };
    l.worker({ tools: [t.tool], reshaper, destructiveTools: ['GIT_*'] });
    const job = await l.run(jobData([call('git_push', { title: 7 })]));
    expect(first(job).content).toMatch(/^Refused/);
    expect(reshaperCalls).toBe(0);
  });

  it('reshapes a call of a tool whose schema refines asynchronously: the proposal is validated as the call is', async () => {
    const l = await lane();
    const runs: number[] = [];
    const tool = defineTool({
      name: 'reserve_seats',
      input: z.object({ count: z.number().int() }).refine(async (args) => args.count > 0, 'count must be positive'),
      effect: 'opaque',
      destructive: false,
      execute: (args) => {
        runs.push(args.count);
        return `reserved ${args.count}`;
      },
    });
    let asked = 0;
    const reshaper: Reshaper = {
      async reshape(req) {
        asked++;
        return { ...req.message, content: req.message.content.map((b) => (b.type === 'tool_use' ? { ...b, input: { count: 3 } } : b)) };
      },
    };
    l.worker({ tools: [tool], reshaper });
    const job = await l.run(jobData([call('reserve_seats', { count: 'three' })]));
    expect(first(job)).toMatchObject({ outcome: 'executed', content: 'reserved 3' });
    expect(asked).toBe(1);
    expect(runs).toEqual([3]);
  });

  it('uses the reshaper for a non-destructive tool, keyed on what the model sent', async () => {
    const l = await lane();
    const t = recordingTool();
    let n = 0;
    // A reshaper that answers differently each time, as a model would.
    const reshaper: Reshaper = {
      async reshape(req) {
        n++;
        return {
          ...req.message,
          content: req.message.content.map((b) => (b.type === 'tool_use' ? { ...b, input: { title: `fixed ${n}` } } : b)),
        };
      },
    };
    l.worker({ tools: [t.tool], reshaper });
    const data = jobData([call('create_issue', { titel: 'typo' }, 'toolu_a')]);
    const a = await l.run(data);
    const b = await l.run({ ...data, calls: [call('create_issue', { titel: 'typo' }, 'toolu_b')] });
    expect(first(a)).toMatchObject({ outcome: 'executed', content: 'created fixed 1' });
    expect(first(b)).toMatchObject({ outcome: 'replayed', content: 'created fixed 1' });
    expect(t.seen).toHaveLength(1);
  });

  it('answers an unknown tool name with the available tools', async () => {
    const l = await lane();
    const t = recordingTool();
    l.worker({ tools: [t.tool] });
    const job = await l.run(jobData([call('createIssue', { title: 'x' })]));
    expect(first(job)).toMatchObject({ outcome: 'rejected', is_error: true });
    expect(first(job).content).toContain('create_issue');
  });

  it("completes a call without waiting for the next call's repair: its lease is no longer renewed by then", async () => {
    const l = await lane();
    const send = defineTool({
      name: 'send_email',
      input: z.object({ to: z.string() }),
      effect: 'opaque',
      destructive: false,
      execute: (args) => `sent to ${args.to}`,
    });
    const note = defineTool({
      name: 'note',
      input: z.object({ n: z.number() }),
      effect: 'opaque',
      destructive: false,
      execute: (args) => `noted ${args.n}`,
    });
    // The reshaper stands for a model that is slow to answer: it answers only once released.
    let release = () => undefined as void;
    const released = new Promise<void>((resolve) => (release = resolve));
    const reshaper: Reshaper = {
      async reshape(req) {
        await released;
        return { ...req.message, content: req.message.content.map((b) => (b.type === 'tool_use' ? { ...b, input: { n: 1 } } : b)) };
      },
    };
    const { processor } = l.worker({ tools: [send, note], reshaper });
    const data = jobData([call('send_email', { to: 'ops@example.com' }), call('note', { n: 'one' })]);
    const job = await l.add(data);
    try {
      // The email's receipt completes while the next call's input is still being repaired.
      const records = await waitUntil(
        () => processor.store.listRun(data.tenantId, data.runId),
        (list) => list.some((r) => r.key.toolName === 'send_email' && r.status === 'completed'),
        10_000,
        "the email's complete",
      );
      expect(records.find((r) => r.key.toolName === 'send_email')).toMatchObject({ status: 'completed', attempts: 1 });
    } finally {
      release();
    }
    const done = await l.settle(job);
    expect((done.returnvalue as ToolJobResult).results.map((r) => [r.outcome, r.content])).toEqual([
      ['executed', 'sent to ops@example.com'],
      ['executed', 'noted 1'],
    ]);
  });
});
