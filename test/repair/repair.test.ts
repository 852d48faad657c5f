import { describe, expect, it, vi } from 'vitest';
import {
  destructiveMatcher,
  repair,
  type AssistantMessage,
  type Reshaper,
  type ReshapeRequest,
  type RepairDeps,
} from '../../src/repair/index.js';
import { message, text, toolUse, tools } from './fixtures.js';

const isDestructive = destructiveMatcher(['delete_file']);

function scripted(...answers: Array<(request: ReshapeRequest) => AssistantMessage | Promise<AssistantMessage>>) {
  const requests: ReshapeRequest[] = [];
  const reshaper: Reshaper = {
    reshape: vi.fn(async (request: ReshapeRequest) => {
      requests.push(request);
      const answer = answers[requests.length - 1];
      if (answer === undefined) throw new Error('no scripted answer left');
      return answer(request);
    }),
  };
  return { reshaper, requests };
}

function deps(overrides: Partial<RepairDeps> = {}): RepairDeps {
  return { maxAttempts: 3, isDestructive, ...overrides };
}

const invalidSearch = message(text('Searching.'), toolUse('t1', 'search', { query: 42 }));
const withInput = (input: unknown): AssistantMessage => message(text('Searching.'), toolUse('t1', 'search', input));

describe('repair without a reshaper call', () => {
  it('is cancelled when the signal has already aborted', async () => {
    const { reshaper } = scripted();
    const decision = await repair(invalidSearch, tools, deps({ reshaper, signal: AbortSignal.abort() }));
    expect(decision).toEqual({ outcome: 'cancelled', attempts: 0 });
    expect(reshaper.reshape).not.toHaveBeenCalled();
  });

  it('refuses a message without tool calls', async () => {
    expect(await repair(message(text('hi')), tools, deps())).toMatchObject({ outcome: 'refused', reason: 'no_tool_use' });
  });

  it('returns a valid message as it is', async () => {
    const msg = withInput({ query: 'q' });
    expect(await repair(msg, tools, deps())).toEqual({ outcome: 'fixed', message: msg, via: 'valid_as_sent', attempts: 0 });
  });

  it('fixes double-encoded inputs without asking the reshaper', async () => {
    const { reshaper } = scripted();
    const decision = await repair(withInput('{"query":"q","tags":"[\\"a\\"]"}'), tools, deps({ reshaper }));
    expect(decision).toEqual({ outcome: 'fixed', message: withInput({ query: 'q', tags: ['a'] }), via: 'normalized', attempts: 0 });
    expect(reshaper.reshape).not.toHaveBeenCalled();
  });

  it('uses alias tables for the schema-driven corrections', async () => {
    const msg = message(toolUse('f1', 'fetch', { url: 'https://a' }));
    const decision = await repair(msg, tools, deps({ aliases: new Map([['fetch', { baseUrl: ['url'] }]]) }));
    expect(decision).toMatchObject({
      outcome: 'fixed',
      via: 'normalized',
      message: message(toolUse('f1', 'fetch', { baseUrl: 'https://a' })),
    });
  });

  it('refuses a message with a destructive call before any reshaping', async () => {
    const { reshaper } = scripted();
    const msg = message(toolUse('d1', 'delete_file', { path: 7 }));
    const decision = await repair(msg, tools, deps({ reshaper }));
    expect(decision).toMatchObject({ outcome: 'refused_destructive', stage: 'before_reshape', toolNames: ['delete_file'] });
    expect(reshaper.reshape).not.toHaveBeenCalled();
  });

  it('refuses when a destructive call is merely present beside an invalid one', async () => {
    const { reshaper } = scripted();
    const msg = message(toolUse('d1', 'delete_file', { path: '/var/data/x' }), toolUse('t1', 'search', {}));
    expect(await repair(msg, tools, deps({ reshaper }))).toMatchObject({ outcome: 'refused_destructive' });
    expect(reshaper.reshape).not.toHaveBeenCalled();
  });

  it('refuses an unknown tool, which no allowed repair can fix', async () => {
    const { reshaper } = scripted();
    const decision = await repair(message(toolUse('x', 'serch', { query: 'q' })), tools, deps({ reshaper }));
    expect(decision).toMatchObject({ outcome: 'refused', reason: 'unknown_tool', issues: [{ code: 'unknown_tool' }] });
    expect(reshaper.reshape).not.toHaveBeenCalled();
  });

  it.each([0, -1, Number.NaN, Number.POSITIVE_INFINITY, 0.5])('refuses when maxAttempts is %s', async (maxAttempts) => {
    const { reshaper } = scripted();
    expect(await repair(invalidSearch, tools, deps({ reshaper, maxAttempts }))).toMatchObject({
      outcome: 'refused',
      reason: 'no_attempts',
    });
  });

  it('refuses without a reshaper', async () => {
    expect(await repair(invalidSearch, tools, deps({ reshaper: null }))).toMatchObject({ outcome: 'refused', reason: 'no_reshaper' });
  });
});

describe('repair with a reshaper', () => {
  it('gives every attempt the original message, never a failed answer', async () => {
    const { reshaper, requests } = scripted(
      () => withInput({ query: ['still wrong'] }),
      () => withInput({ query: '42' }),
    );
    const decision = await repair(invalidSearch, tools, deps({ reshaper, backendModel: 'model-a' }));
    expect(decision).toEqual({ outcome: 'fixed', message: withInput({ query: '42' }), via: 'reshaped', attempts: 2 });
    expect(requests.map((r) => r.attempt)).toEqual([1, 2]);
    expect(requests[1]?.message).toEqual(invalidSearch);
    expect(requests[1]?.issues).toEqual(requests[0]?.issues);
    expect(requests[0]?.issues[0]).toMatchObject({ code: 'invalid_input', toolUseId: 't1', path: ['query'] });
    expect(requests[0]?.backendModel).toBe('model-a');
  });

  it('reports an unknown backend model as null', async () => {
    const { reshaper, requests } = scripted(() => withInput({ query: 'x' }));
    await repair(invalidSearch, tools, deps({ reshaper }));
    expect(requests[0]?.backendModel).toBeNull();
  });

  it('decodes a double-encoded answer before validating it', async () => {
    const { reshaper } = scripted(() => withInput('{"query":"42"}'));
    expect(await repair(invalidSearch, tools, deps({ reshaper }))).toMatchObject({ outcome: 'fixed', message: withInput({ query: '42' }) });
  });

  it('drops answers that change structure and tries again', async () => {
    const { reshaper } = scripted(
      () => message(text('Changed.'), toolUse('t1', 'search', { query: '42' })),
      () => message(text('Searching.'), toolUse('t1', 'search', { query: '42' }), toolUse('t2', 'search', { query: 'y' })),
      () => withInput({ query: '42' }),
    );
    const decision = await repair(invalidSearch, tools, deps({ reshaper }));
    expect(decision).toMatchObject({ outcome: 'fixed', attempts: 3 });
  });

  it('emits only inputs from the answer; everything else comes from the received message', async () => {
    const original: AssistantMessage = { ...invalidSearch, id: 'msg_1', model: 'm' };
    const { reshaper } = scripted(() => ({ ...original, content: [text('Searching.'), toolUse('t1', 'search', { query: 'ok' })] }));
    const decision = await repair(original, tools, deps({ reshaper }));
    expect(decision).toMatchObject({ outcome: 'fixed', message: { id: 'msg_1', model: 'm' } });
  });

  it('stops at an answer that names a destructive tool', async () => {
    const { reshaper } = scripted(
      () => message(text('Searching.'), toolUse('t1', 'delete_file', { path: '/' })),
      () => withInput({ query: '42' }),
    );
    const decision = await repair(invalidSearch, tools, deps({ reshaper }));
    expect(decision).toMatchObject({ outcome: 'refused_destructive', stage: 'reshaped_answer', toolNames: ['delete_file'] });
    expect(reshaper.reshape).toHaveBeenCalledTimes(1);
  });

  it('fails after maxAttempts bad answers, recording each', async () => {
    const { reshaper } = scripted(
      () => {
        throw new Error('backend down');
      },
      () => message(text('x')),
      () => withInput({ query: 1 }),
      () => withInput({ query: 'never asked' }),
    );
    const decision = await repair(invalidSearch, tools, deps({ reshaper }));
    expect(decision.outcome).toBe('failed');
    if (decision.outcome !== 'failed') return;
    expect(decision.attempts).toBe(3);
    expect(decision.failures.map((f) => f.kind)).toEqual(['threw', 'reshaped_structure', 'still_invalid']);
    expect(decision.issues[0]).toMatchObject({ path: ['query'] });
    expect(reshaper.reshape).toHaveBeenCalledTimes(3);
  });

  it('is cancelled at once when aborted during a pending reshape', async () => {
    const controller = new AbortController();
    const reshaper: Reshaper = {
      reshape: (request) => {
        expect(request.signal).toBe(controller.signal);
        setTimeout(() => controller.abort(), 5);
        return new Promise<AssistantMessage>(() => {});
      },
    };
    expect(await repair(invalidSearch, tools, deps({ reshaper, signal: controller.signal }))).toEqual({
      outcome: 'cancelled',
      attempts: 1,
    });
  });

  it('ignores an answer that arrives after the abort', async () => {
    const controller = new AbortController();
    const { reshaper } = scripted(() => {
      controller.abort();
      return withInput({ query: '42' });
    });
    expect(await repair(invalidSearch, tools, deps({ reshaper, signal: controller.signal }))).toEqual({
      outcome: 'cancelled',
      attempts: 1,
    });
  });

  it('never mutates the received message', async () => {
    const original = withInput({ query: 42, tags: '["a"]' });
    const snapshot = structuredClone(original);
    const { reshaper } = scripted(() => withInput({ query: '42', tags: ['a'] }));
    await repair(original, tools, deps({ reshaper }));
    expect(original).toEqual(snapshot);
  });
});
