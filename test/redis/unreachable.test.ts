/** Which ioredis failures mean "Redis did not answer", and what the typed errors name. */
import { describe, expect, it } from 'vitest';
import { ToolReceiptsError } from '../../src/core/errors.js';
import { receiptRedisKey } from '../../src/redis/keys.js';
import { CorruptReceiptError, RedisTimeoutError, RedisConnectionLostError } from '../../src/redis/index.js';
import { stepOfScript, unreachableErrorOf } from '../../src/redis/connection/unreachable.js';
import { CommandDeadlineError, CommandNotSentError } from '../../src/redis/connection/clients/deadline.js';

const redisKey = receiptRedisKey('trc', { tenantId: 'acme', runId: 'run 1', toolName: 'send:email', argsHash: 'h1' });
const where = { redisKey, step: 'claim' };

describe('unreachableErrorOf', () => {
  it('types a command timeout as redis.timeout, naming the receipt, its tool and the step', () => {
    const cause = new Error('Command timed out');
    const error = unreachableErrorOf(cause, where);
    expect(error).toBeInstanceOf(RedisTimeoutError);
    expect(error).toBeInstanceOf(ToolReceiptsError);
    expect(error).toMatchObject({ code: 'redis.timeout', redisKey, tool: 'send:email', step: 'claim', cause, releases: [] });
    expect((error as Error).message).toBe(
      `claim of ${redisKey} (tool send:email) timed out (Command timed out); whether it ran is unknown`,
    );
  });

  it('types a lost, refused or exhausted connection as redis.unavailable', () => {
    const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), { code: 'ECONNREFUSED' });
    const exhausted = Object.assign(new Error('Reached the max retries per request limit (which is 1).'), {
      name: 'MaxRetriesPerRequestError',
    });
    for (const cause of [
      new Error('Connection is closed.'),
      refused,
      exhausted,
      new Error("Stream isn't writeable and enableOfflineQueue options is false"),
    ]) {
      expect(unreachableErrorOf(cause, where)).toBeInstanceOf(RedisConnectionLostError);
    }
  });

  it('says a command the client never sent did not run, with the typed error of what it failed with', () => {
    const exhausted = Object.assign(new Error('Reached the max retries per request limit (which is 20).'), {
      name: 'MaxRetriesPerRequestError',
    });
    const dropped = unreachableErrorOf(new CommandNotSentError(exhausted), where);
    expect(dropped).toBeInstanceOf(RedisConnectionLostError);
    expect(dropped).toMatchObject({ code: 'redis.unavailable', sent: false, cause: exhausted });
    expect((dropped as Error).message).toBe(
      `claim of ${redisKey} (tool send:email) was not sent (${exhausted.message}), so it did not run`,
    );
    // The adapter's deadline: unwritten with no connection is unavailability, unwritten on a stuck one a timeout.
    expect(unreachableErrorOf(new CommandNotSentError(new CommandDeadlineError(500, false, false)), where)).toMatchObject({
      code: 'redis.unavailable',
      sent: false,
    });
    expect(unreachableErrorOf(new CommandNotSentError(new CommandDeadlineError(500, true, false)), where)).toMatchObject({
      code: 'redis.timeout',
      sent: false,
    });
    const late = unreachableErrorOf(new CommandDeadlineError(500, true, true), where);
    expect(late).toMatchObject({ code: 'redis.timeout', sent: true });
    expect((late as Error).message).toBe(
      `claim of ${redisKey} (tool send:email) timed out (no reply within 500 ms); whether it ran is unknown`,
    );
    // Without the adapter's word, the same failure may have been written.
    expect(unreachableErrorOf(exhausted, where)).toMatchObject({ sent: true });
  });

  it('leaves every other error as it is', () => {
    const corrupt = new CorruptReceiptError(redisKey, 'bad');
    for (const error of [new Error('ERR unknown command'), corrupt, 'a string']) expect(unreachableErrorOf(error, where)).toBe(error);
  });

  it('names a key that is not a receipt without a tool', () => {
    expect(unreachableErrorOf(new Error('Command timed out'), { redisKey: 'trc:brk:{acme|run}', step: 'breaker failure' })).toMatchObject({
      tool: undefined,
    });
  });
});

describe('stepOfScript', () => {
  it('names the step after the script, in camel case', () => {
    expect(stepOfScript('complete-claim')).toBe('completeClaim');
    expect(stepOfScript('release-lost-claim')).toBe('releaseLostClaim');
    expect(stepOfScript('claim')).toBe('claim');
  });
});
