/**
 * The whole command line: argument parsing, exit codes and error sentences
 * through `runCli` in process, and the real entry point spawned as a child
 * process against the test server.
 */
import { describe, expect, it } from 'vitest';
import { runCli } from '../../src/cli/cli.js';
import type { ReceiptRecord } from '../../src/redis/receipts/reads/record.js';
import { freshKey, useRedis } from '../support/redis-fixture.js';
import { Capture, hasStackTrace, makeAmbiguous, spawnCli, spawnCliIntoClosedPipe } from './support.js';

const fixture = useRedis();

async function cli(argv: string[], env: Record<string, string | undefined> = {}) {
  const stdout = new Capture();
  const stderr = new Capture();
  const code = await runCli(argv, { stdout, stderr, env });
  return { code, stdout: stdout.text, stderr: stderr.text };
}

/** Connection options for the test server and this file's prefix. */
function conn(): string[] {
  return ['--redis', fixture.handle().url, '--prefix', fixture.handle().prefix];
}

describe('runCli: command line', () => {
  it('prints help with exit 0, and usage on stderr with exit 2 when given nothing', async () => {
    for (const argv of [['--help'], ['-h'], ['help']]) {
      const run = await cli(argv);
      expect(run.code).toBe(0);
      expect(run.stdout).toContain('Usage: tool-receipts <command> [options]');
      for (const name of ['ambiguous', 'run <tenant> <run>', 'show <redisKey>', 'resolve <redisKey>']) expect(run.stdout).toContain(name);
    }
    const bare = await cli([]);
    expect(bare.code).toBe(2);
    expect(bare.stdout).toBe('');
    expect(bare.stderr).toContain('Usage: tool-receipts <command>');
  });

  it('prints each command\u2019s help without connecting to Redis', async () => {
    for (const name of ['ambiguous', 'run', 'show', 'resolve']) {
      for (const argv of [
        [name, '--help'],
        ['help', name],
        ['--redis', 'redis://127.0.0.1:1', name, '-h'],
      ]) {
        const run = await cli(argv);
        expect(run.code).toBe(0);
        expect(run.stdout).toContain(`Usage: tool-receipts ${name}`);
        expect(run.stdout).toContain('--prefix <p>');
      }
    }
  });

  it.each([
    [['frob'], 'unknown command "frob"'],
    [['aprove', 'k'], 'unknown command "aprove" (did you mean approve?)'],
    [['help', 'abiguous'], 'unknown command "abiguous" (did you mean ambiguous?)'],
    [['run', 'only-tenant'], 'run takes <tenant> <run>, got "only-tenant"'],
    [['show'], 'show takes <redisKey>, got none'],
    [['ambiguous', '--bogus'], 'ambiguous has no option --bogus'],
    [['resolve', 'k', '--completed'], 'resolve needs --attempts <n>'],
    [['resolve', 'k', '--attempts', 'two', '--completed'], '--attempts must be a positive whole number, got "two"'],
    [['resolve', 'k', '--attempts', '0', '--completed'], '--attempts must be a positive whole number, got "0"'],
    [['resolve', 'k', '--attempts', '1'], 'exactly one of --completed or --failed'],
    [['resolve', 'k', '--attempts', '1', '--completed', '--failed'], 'exactly one of --completed or --failed'],
    [['resolve', 'k', '--attempts', '1', '--failed'], '--failed needs --error <text>'],
    [['resolve', 'k', '--attempts', '1', '--failed', '--error', 'x', '--result', '1'], '--result goes with --completed'],
    [['resolve', 'k', '--attempts', '1', '--completed', '--error', 'x'], '--error goes with --failed'],
    [['resolve', 'k', '--attempts', '1', '--completed', '--result', 'sent'], '--result must be JSON, got "sent"'],
    [['ambiguous', '--redis', 'http://example'], 'must be a redis:// or rediss:// URL'],
    [['ambiguous', '--retention-ms', '-5'], "Option '--retention-ms' argument is ambiguous"],
    [['ambiguous', '--retention-ms', '1.5'], '--retention-ms must be a positive whole number'],
  ])('%j is a usage error (exit 2): %s', async (argv, message) => {
    const run = await cli(argv, { REDIS_URL: 'redis://127.0.0.1:1' });
    expect(run.code).toBe(2);
    expect(run.stdout).toBe('');
    expect(run.stderr).toContain(message);
    expect(run.stderr.trim().split('\n')).toHaveLength(1);
    expect(hasStackTrace(run.stderr)).toBe(false);
  });

  it('refuses a bad prefix before connecting', async () => {
    const run = await cli(['ambiguous', '--prefix', 'a{b}'], { REDIS_URL: 'redis://127.0.0.1:1' });
    expect(run.code).toBe(2);
    expect(run.stderr).toContain("--prefix must be the workers' key prefix");
    expect(run.stderr).toContain('got "a{b}"');
  });

  it('says in one sentence when Redis cannot be reached (exit 1)', async () => {
    const run = await cli(['ambiguous'], { REDIS_URL: 'redis://:secret@127.0.0.1:1' });
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/^tool-receipts: cannot reach Redis at redis:\/\/:\*\*\*@127\.0\.0\.1:1: .*ECONNREFUSED/);
    expect(run.stderr).not.toContain('secret');
    expect(hasStackTrace(run.stderr)).toBe(false);
  });

  it('with --json, reports an error as JSON with its code', async () => {
    const run = await cli(['show', 'not-a-key', '--json', ...conn()]);
    expect(run.code).toBe(2);
    expect(JSON.parse(run.stderr)).toEqual({
      error: { code: 'cli.invalid_receipt_key', message: expect.stringContaining('not a receipt key') },
    });
  });

  it('treats a key whose names decode to a lone surrogate as a bad command line (exit 2, identity.malformed_name)', async () => {
    const key = `${fixture.handle().prefix}:rcpt:{t%ED%A0%80|r}:send_email:h`;
    for (const argv of [
      ['show', key],
      ['resolve', key, '--attempts', '1', '--failed', '--error', 'x'],
    ]) {
      const run = await cli([...argv, '--json', ...conn()]);
      expect(run.code).toBe(2);
      expect(JSON.parse(run.stderr)).toMatchObject({ error: { code: 'identity.malformed_name' } });
    }
  });

  it('takes the URL from REDIS_URL, and connection options before or after the command', async () => {
    const store = fixture.store();
    const key = freshKey();
    await makeAmbiguous(store, key);
    const { url, prefix } = fixture.handle();
    for (const [argv, env] of [
      [['ambiguous', '--json', '--prefix', prefix], { REDIS_URL: url }],
      [['--prefix', prefix, '--redis', url, 'ambiguous', '--json'], {}],
      [['--prefix', prefix, 'ambiguous', '--redis', url, '--json'], { REDIS_URL: 'redis://127.0.0.1:1' }],
    ] as const) {
      const run = await cli([...argv], env);
      expect(run.stderr).toBe('');
      expect(run.code).toBe(0);
      expect((JSON.parse(run.stdout) as { receipts: ReceiptRecord[] }).receipts.map((r) => r.redisKey)).toContain(store.redisKey(key));
    }
  });
});

describe('the tool-receipts binary (spawned)', () => {
  it('--help exits 0', async () => {
    const run = await spawnCli(['--help']);
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('Usage: tool-receipts <command> [options]');
    expect(run.stderr).toBe('');
  });

  it('lists ambiguous receipts, resolves one, then shows it settled', async () => {
    const store = fixture.store();
    const key = freshKey({ toolName: 'send_email' });
    await makeAmbiguous(store, key);
    const redisKey = store.redisKey(key);
    const { url, prefix } = fixture.handle();

    const listed = await spawnCli(['ambiguous', '--prefix', prefix], url);
    expect(listed.code).toBe(0);
    expect(listed.stderr).toBe('');
    expect(listed.stdout).toMatch(/^TENANT\s+RUN\s+TOOL\s+ATTEMPTS\s+RECONCILED\s+SINCE\s+REDIS KEY\n/);
    expect(listed.stdout).toContain(`${key.tenantId}  ${key.runId}  send_email  1`);
    expect(listed.stdout).toContain(redisKey);

    const resolved = await spawnCli(['resolve', redisKey, '--prefix', prefix, '--attempts', '1', '--completed', '--result', '"sent"'], url);
    expect(resolved.stderr).toBe('');
    expect(resolved.code).toBe(0);
    expect(resolved.stdout).toContain(`Resolved ${redisKey} as completed at attempt 1.`);
    expect((await store.claim(key, { effect: 'opaque' })).result).toBe('sent');

    const shown = await spawnCli(['show', redisKey, '--prefix', prefix, '--json'], url);
    expect(shown.code).toBe(0);
    expect(JSON.parse(shown.stdout)).toMatchObject({ status: 'completed', result: 'sent', attempts: 1 });
  });

  it('resolve with stale attempts exits 1 with one sentence and writes nothing', async () => {
    const store = fixture.store();
    const key = freshKey();
    await makeAmbiguous(store, key);
    await store.resolve(key, { attemptsSeen: 1, outcome: 'failed', error: 'not sent' });
    await makeAmbiguous(store, key);
    const { url, prefix } = fixture.handle();

    const run = await spawnCli(['resolve', store.redisKey(key), '--prefix', prefix, '--attempts', '1', '--failed', '--error', 'x'], url);
    expect(run.code).toBe(1);
    expect(run.stdout).toBe('');
    expect(run.stderr).toMatch(
      /^tool-receipts: not resolved, nothing was written: you typed --attempts 1, the receipt is at attempt 2 \(running\): one more attempt has started since attempt 1, after an operator resolved it failed by /,
    );
    expect(run.stderr.trim().split('\n')).toHaveLength(1);
    expect(hasStackTrace(run.stderr)).toBe(false);
    expect(await store.inspect(key)).toMatchObject({ status: 'running', attempts: 2, resolvedMs: null });
  });

  it('ends quietly (exit 0, nothing on stderr) when the reader of its output has gone, as `| head -1` leaves it', async () => {
    const store = fixture.store();
    await makeAmbiguous(store, freshKey());
    const { url, prefix } = fixture.handle();
    for (const argv of [['ambiguous'], ['audit'], ['ambiguous', '--json']]) {
      const run = await spawnCliIntoClosedPipe([...argv, '--prefix', prefix], url);
      expect(run.stderr, argv.join(' ')).toBe('');
      expect(run.code, argv.join(' ')).toBe(0);
    }
  });

  it('show of an unknown key exits 1 with one sentence', async () => {
    const { url, prefix } = fixture.handle();
    const redisKey = fixture.store().redisKey(freshKey());
    const run = await spawnCli(['show', redisKey, '--prefix', prefix], url);
    expect(run.code).toBe(1);
    expect(run.stdout).toBe('');
    expect(run.stderr).toBe(
      `tool-receipts: no receipt exists under ${redisKey} (never claimed, already expired, or a different --prefix or server)\n`,
    );
  });
});
