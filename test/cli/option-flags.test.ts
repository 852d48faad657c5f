/**
 * Every flag that takes a number or a name is checked before the CLI
 * connects: NaN, a negative, a fraction, an empty value or a prefix that
 * would break the key layout is a usage error (exit 2) naming the flag, in
 * one sentence. No Redis is needed: nothing is reached for.
 */
import { describe, expect, it } from 'vitest';
import { runCli } from '../../src/cli/cli.js';
import { Capture, hasStackTrace } from './support.js';

/** Runs the CLI against a port nothing listens on: a flag refused must never get that far. */
async function cli(argv: string[]) {
  const stdout = new Capture();
  const stderr = new Capture();
  const code = await runCli(argv, { stdout, stderr, env: { REDIS_URL: 'redis://127.0.0.1:1' } });
  return { code, stdout: stdout.text, stderr: stderr.text };
}

const RESOLVE = ['resolve', 'trc:rcpt:{t|r}:tool:h', '--completed'];

describe('CLI flags that cannot work', () => {
  it.each([
    [['ambiguous', '--retention-ms=-5'], '--retention-ms', '"-5"'],
    [['ambiguous', '--retention-ms', 'NaN'], '--retention-ms', '"NaN"'],
    [['ambiguous', '--retention-ms', ''], '--retention-ms', '""'],
    [['ambiguous', '--retention-ms', '0'], '--retention-ms', '"0"'],
    [['ambiguous', '--retention-ms', '1e3'], '--retention-ms', '"1e3"'],
    [['ambiguous', '--retention-ms', 'Infinity'], '--retention-ms', '"Infinity"'],
    [['ambiguous', '--retention-ms', '99999999999999999999'], '--retention-ms', '"99999999999999999999"'],
    [['doctor', '--replicas=-1'], '--replicas', '"-1"'],
    [['doctor', '--replicas', 'NaN'], '--replicas', '"NaN"'],
    [['doctor', '--replicas', ''], '--replicas', '""'],
    [['doctor', '--replicas', '1.5'], '--replicas', '"1.5"'],
    [[...RESOLVE, '--attempts', 'NaN'], '--attempts', '"NaN"'],
    [[...RESOLVE, '--attempts', ''], '--attempts', '""'],
    [[...RESOLVE, '--attempts=-2'], '--attempts', '"-2"'],
    [['ambiguous', '--prefix', ''], '--prefix', '""'],
    [['ambiguous', '--prefix', 'a b'], '--prefix', '"a b"'],
    [['ambiguous', '--prefix', 'trc*'], '--prefix', '"trc*"'],
    [['stats', '--tenant', ''], '--tenant', ''],
    [['ambiguous', '--redis', ''], '--redis', '""'],
  ])('%j: exit 2, naming %s and the value', async (argv, flag, shown) => {
    const run = await cli(argv);
    expect(run.code).toBe(2);
    expect(run.stdout).toBe('');
    expect(run.stderr).toContain(flag);
    expect(run.stderr).toContain(shown);
    expect(run.stderr).not.toContain('cannot reach Redis');
    expect(run.stderr.trim().split('\n')).toHaveLength(1);
    expect(hasStackTrace(run.stderr)).toBe(false);
  });

  it('with --json, the refusal is cli.usage', async () => {
    const run = await cli(['ambiguous', '--json', '--retention-ms', 'NaN']);
    expect(run.code).toBe(2);
    expect(JSON.parse(run.stderr)).toEqual({ error: { code: 'cli.usage', message: expect.stringContaining('--retention-ms') } });
  });

  it.each([
    [['ambiguous', '--prefx', 'trc'], '--prefx', 'did you mean --prefix?'],
    [[...RESOLVE, '--atempts', '2'], '--atempts', 'did you mean --attempts?'],
    [['stats', '--tenat', 'acme'], '--tenat', 'did you mean --tenant?'],
  ])('%j: an unknown flag close to a known one is refused with the one meant', async (argv, typed, hint) => {
    const run = await cli(argv);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain(`has no option ${typed} (${hint})`);
    expect(run.stderr.trim().split('\n')).toHaveLength(1);
  });

  it('an unknown flag close to none is refused without a guess', async () => {
    const run = await cli(['stats', '--zzzzzzzz']);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('has no option --zzzzzzzz;');
    expect(run.stderr).not.toContain('did you mean');
  });
});
