/**
 * Options a user can get wrong by accident (an unset environment variable, a
 * connection not yet made, a schema from zod 3) are refused with a typed
 * error whose code is stable and whose sentence says what to pass.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { z as z3 } from 'zod/v3';
import { hmacSha256Digest, InvalidDigestSecretError } from '../../src/core/index.js';
import { ToolReceiptsError } from '../../src/core/errors.js';
import {
  defineTool,
  InvalidToolReceiptsOptionsError,
  ToolSchemaUnsupportedError,
  withToolReceipts,
  type ToolReceiptsOptions,
} from '../../src/bullmq/index.js';
import { BreakerStore, InvalidRedisConnectionError, ReceiptStore } from '../../src/redis/index.js';
import { RedisToolResultStore } from '../../src/offload/index.js';

/** The error `fn` throws; fails the test when it returns. */
function thrown(fn: () => unknown): ToolReceiptsError {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(ToolReceiptsError);
    return error as ToolReceiptsError;
  }
  throw new Error('expected a throw');
}

const echo = { effect: 'opaque' as const, execute: () => 'ok' };

describe('hmacSha256Digest', () => {
  it.each([
    ['undefined (an unset variable)', undefined, /undefined \(an unset environment variable/],
    ['an empty string', '', /an empty string/],
    ['spaces only', '   ', /a string of whitespace only/],
    ['a single space', ' ', /a string of whitespace only/],
    ['a stray newline', '\n', /a string of whitespace only/],
    ['an empty Buffer', Buffer.alloc(0), /an empty Buffer/],
    ['a number', 42, /a number/],
  ])('refuses %s with digest.invalid_secret', (_label, secret, said) => {
    const error = thrown(() => hmacSha256Digest(secret as string));
    expect(error).toBeInstanceOf(InvalidDigestSecretError);
    expect(error.code).toBe('digest.invalid_secret');
    expect(error.message).toMatch(said);
    expect(error.message).toMatch(/non-empty string or Buffer/);
  });

  it('still digests with a usable secret, and the key matters', async () => {
    const a = await hmacSha256Digest('s1')('{"a":1}');
    expect(a).toMatch(/^[0-9a-f]{64}$/);
    expect(await hmacSha256Digest(Buffer.from('s1'))('{"a":1}')).toBe(a);
    expect(await hmacSha256Digest('s2')('{"a":1}')).not.toBe(a);
  });
});

describe('defineTool and the schema it is given', () => {
  it('refuses a zod 3 schema with tool.schema_unsupported, naming the tool and what to install', () => {
    const error = thrown(() => defineTool({ name: 'send_email', input: z3.object({ to: z3.string() }) as never, ...echo }));
    expect(error).toBeInstanceOf(ToolSchemaUnsupportedError);
    expect(error.code).toBe('tool.schema_unsupported');
    expect(error.message).toContain('send_email');
    expect(error.message).toContain('a zod 3 schema');
    expect(error.message).toContain('zod@^4');
  });

  it.each([
    ['no schema', undefined, 'undefined'],
    ['a JSON Schema object', { type: 'object' }, 'not a zod schema'],
    ['a string', 'z.string()', 'a string'],
  ])('refuses %s', (_label, input, said) => {
    const error = thrown(() => defineTool({ name: 'lookup', input: input as never, ...echo }));
    expect(error.code).toBe('tool.schema_unsupported');
    expect(error.message).toContain(said);
  });

  it.each([
    ['readOnly as a string', { readOnly: 'false' }, /`readOnly` must be true or false; got "false"/],
    ['destructive as a number', { destructive: 0 }, /`destructive` must be true or false; got 0/],
    ['parallel as a string', { parallel: 'no' }, /`parallel` must be true or false; got "no"/],
    ['a misspelt flag', { readonly: true }, /unknown option `readonly`; did you mean `readOnly`\?/],
    ['a hint that is not a boolean', { annotations: { readOnlyHint: 'yes' } }, /`annotations` must be an object of MCP hints/],
    ['aliases as a list', { aliases: ['url'] }, /`aliases` must be an object of alias lists/],
  ])('refuses %s with tool.invalid_definition, naming the tool and the field', (_label, extra, said) => {
    const error = thrown(() => defineTool({ name: 'send_email', input: z.object({}), ...echo, ...extra } as never));
    expect(error.code).toBe('tool.invalid_definition');
    expect(error.message).toContain('tool send_email');
    expect(error.message).toMatch(said);
  });

  it('accepts a defined tool spread into a new spec, with its resolved flags', () => {
    const tool = defineTool({ name: 'lookup', input: z.object({}), ...echo, readOnly: true });
    const again = defineTool({ ...tool, parallel: true });
    expect(again).toMatchObject({ readOnly: true, openWorld: true, parallel: true });
  });

  it('accepts MCP annotations beyond the hints (a title)', () => {
    const tool = defineTool({
      name: 'lookup',
      input: z.object({}),
      ...echo,
      annotations: { title: 'Look up', readOnlyHint: true } as never,
    });
    expect(tool.readOnly).toBe(true);
  });

  it('accepts a zod 4 schema', () => {
    expect(defineTool({ name: 'lookup', input: z.object({ to: z.email() }), ...echo }).name).toBe('lookup');
  });
});

describe('a missing or wrong connection', () => {
  const tools = [defineTool({ name: 'lookup', input: z.object({}), ...echo })];

  it.each([
    ['undefined', undefined, /got undefined/],
    ['null', null, /got null/],
    ['a URL string', 'redis://127.0.0.1:6379', /got a string/],
    ['an options object', { host: '127.0.0.1' }, /got an object without the methods of an ioredis client/],
    // Half an ioredis client: without `on` the adapter could not follow its connection.
    [
      'an object with defineCommand and pipeline only',
      { defineCommand() {}, pipeline() {} },
      /got an object without the methods of an ioredis client/,
    ],
  ])('withToolReceipts refuses %s as redis', (_label, redis, said) => {
    const error = thrown(() => withToolReceipts({ redis, tools } as unknown as ToolReceiptsOptions));
    expect(error).toBeInstanceOf(InvalidRedisConnectionError);
    expect(error.code).toBe('redis.invalid_connection');
    expect(error.message).toMatch(/^withToolReceipts needs `redis`: an ioredis Redis or Cluster/);
    expect(error.message).toMatch(said);
  });

  it.each([
    ['ReceiptStore', () => new ReceiptStore({ redis: undefined as never })],
    ['BreakerStore', () => new BreakerStore({ redis: undefined as never })],
    ['RedisToolResultStore', () => new RedisToolResultStore({ redis: undefined as never })],
  ])('%s names itself when redis is missing', (owner, make) => {
    const error = thrown(make);
    expect(error.code).toBe('redis.invalid_connection');
    expect(error.message.startsWith(`${owner} needs \`redis\``)).toBe(true);
  });
});

describe('other withToolReceipts options', () => {
  const redisLike = { defineCommand() {}, pipeline() {}, on() {} };
  const tools = [defineTool({ name: 'lookup', input: z.object({}), ...echo })];

  it.each([
    ['no options at all', undefined, /the options must be an object with `redis`, `tools`/],
    ['tools missing', { redis: redisLike }, /`tools` must be an array/],
    ['digest not a function', { redis: redisLike, tools, digest: 'secret' }, /`digest` must be a function/],
    ['onAmbiguous misspelt', { redis: redisLike, tools, onAmbiguous: 'retry' }, /"fail" or "report"; got "retry"/],
    ['logger without child', { redis: redisLike, tools, logger: console.log }, /`logger` must be a pino logger/],
    ['no tools', { redis: redisLike, tools: [] }, /`tools` must be an array of tools made with defineTool, at least one/],
    [
      'a tool name instead of a tool',
      { redis: redisLike, tools: ['lookup'] },
      /`tools\[0\]` must be a tool made with defineTool; got a string/,
    ],
  ])('refuses %s with options.invalid', (_label, options, said) => {
    const error = thrown(() => withToolReceipts(options as unknown as ToolReceiptsOptions));
    expect(error).toBeInstanceOf(InvalidToolReceiptsOptionsError);
    expect(error.code).toBe('options.invalid');
    expect(error.message).toMatch(said);
  });
});
