import { cpSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import {
  ScriptDefinitionError,
  ScriptIncludeError,
  ScriptLibrary,
  defineScripts,
  expandIncludes,
  packageScripts,
  runScript,
  runVariadicScript,
  scriptEntry,
  scriptSource,
} from '../../src/redis/scripts/scripts.js';
import { receiptsConnection } from '../../src/redis/connection/connection.js';
import { useRedis } from '../support/redis-fixture.js';

const fixture = useRedis();

/** A copy of the package's lua/ directory with `files` added (name -> text), for the loader to read. */
function luaDirWith(files: Record<string, string>): URL {
  const dir = mkdtempSync(join(tmpdir(), 'lua-'));
  made.push(dir);
  cpSync(fileURLToPath(new URL('../../lua/', import.meta.url)), dir, { recursive: true });
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  return pathToFileURL(`${dir}/`);
}
const made: string[] = [];
afterAll(() => {
  for (const dir of made) rmSync(dir, { recursive: true, force: true });
});

/** A script header: its name, the KEYS and ARGV lines given, and a Returns line. */
const header = (name: string, keys: readonly string[], argv: readonly string[] = ['ARGV  none.']): string =>
  [
    '--[[',
    `  ${name}: a script written by a test.`,
    '',
    ...keys.map((k) => `  ${k}`),
    '',
    ...argv.map((a) => `  ${a}`),
    '',
    '  Returns what the test reads.',
    ']]',
    '',
  ].join('\n');

function refusal(run: () => unknown): ScriptDefinitionError {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(ScriptDefinitionError);
    expect(error).toMatchObject({ code: 'redis.script_definition' });
    return error as ScriptDefinitionError;
  }
  throw new Error('expected a ScriptDefinitionError');
}

describe('the script loader', () => {
  it('runs every script of lua/ by its file name without the key count, on any connection', async () => {
    const key = `${fixture.handle().prefix}:none`;
    expect(await runScript(fixture.connect(), 'inspect', [key], [])).toEqual([expect.any(Number), -2]);
    expect(packageScripts().script('complete-claim')).toMatchObject({ file: 'complete-claim-5.lua', keys: { kind: 'fixed', count: 5 } });
    expect(packageScripts().script('commit-batch')).toMatchObject({ file: 'commit-batch-N.lua', keys: { kind: 'variadic', atLeast: 0 } });
    expect(packageScripts().script('claim-group').keys).toEqual({ kind: 'variadic', atLeast: 3 });
  });

  it('a file added to lua/ is all it takes to call it, includes and all', async () => {
    const library = ScriptLibrary.load(
      luaDirWith({
        'echo-keys-2.lua': `${header('echo-keys', ['KEYS[1]  any key', 'KEYS[2]  another key'], ['ARGV[1]  a word'])}--- @include "server-now"\n\nreturn { KEYS[1], KEYS[2], ARGV[1], serverNow() }\n`,
      }),
    );
    expect(library.names).toEqual([...packageScripts().names, 'echo-keys'].sort());
    const [a, b] = [`${fixture.handle().prefix}:{e}a`, `${fixture.handle().prefix}:{e}b`];
    expect(await library.run(fixture.connect(), 'echo-keys', [a, b], ['hello'])).toEqual([a, b, 'hello', expect.any(Number)]);
    expect(library.script('echo-keys').keys).toEqual({ kind: 'fixed', count: 2 });
    // The package's own scripts load the same way from the copy.
    expect(library.script('claim').lua.sha).toBe(packageScripts().script('claim').lua.sha);
  });

  it('a variadic <name>-N.lua takes the key count first, and at least the fixed keys its header lays out', async () => {
    const library = ScriptLibrary.load(
      luaDirWith({
        'first-and-count-N.lua': `${header('first-and-count', ['KEYS[1]       the first key', 'KEYS[2..n]    any more'])}return { #KEYS, KEYS[1] }\n`,
      }),
    );
    expect(library.script('first-and-count').keys).toEqual({ kind: 'variadic', atLeast: 1 });
    const redis = fixture.connect();
    const [a, b, c] = ['{v}a', '{v}b', '{v}c'];
    expect(await library.run(redis, 'first-and-count', ['3', a, b, c], [])).toEqual([3, a]);
    expect(await library.run(redis, 'first-and-count', ['1', a], [])).toEqual([1, a]);
    expect(refusal(() => library.entry('first-and-count', ['0'], [])).message).toMatch(/key count first, at least 1; got 0/);
    expect(refusal(() => library.entry('first-and-count', ['4', a, b], [])).message).toMatch(/got 4 with 2 values/);
    expect(await runVariadicScript(redis, 'tally', [], [])).toEqual([expect.any(Number), 0, 0, -1]);
  });

  it.each([
    [
      'a header declaring fewer KEYS than the file name',
      'short-3.lua',
      header('short', ['KEYS[1]  a', 'KEYS[2]  b']),
      /lua\/short-3\.lua declares 2 KEYS in its header \(KEYS\[1\] \.\. KEYS\[2\]\), but its file name says 3/,
    ],
    [
      'a header declaring more KEYS than the file name',
      'long-1.lua',
      header('long', ['KEYS[1]  a', 'KEYS[2]  b']),
      /lua\/long-1\.lua declares 2 KEYS .*says 1/,
    ],
    ['a range that overruns the file name', 'range-2.lua', header('range', ['KEYS[1] .. KEYS[3]  three']), /declares 3 KEYS .*says 2/],
    ['KEYS out of order', 'gap-2.lua', header('gap', ['KEYS[1]  a', 'KEYS[3]  c']), /declares KEYS\[3\] where KEYS\[2\] comes next/],
    [
      'a fixed file whose header lays out any number',
      'open-2.lua',
      header('open', ['KEYS[1]  a', 'KEYS[2..n]  more']),
      /declares any number of KEYS \(at least 1\) in its header, but its file name says 2/,
    ],
    [
      'a variadic file whose header declares a fixed count',
      'fixed-N.lua',
      header('fixed', ['KEYS[1]  a']),
      /declares 1 KEYS in its header, but its file name says N/,
    ],
    [
      'code using a key its header does not declare',
      'reach-1.lua',
      `${header('reach', ['KEYS[1]  a'])}return KEYS[2]\n`,
      /uses KEYS\[2\], but its header declares 1 KEYS/,
    ],
    [
      'an include reading keys the script does not take',
      'opens-1.lua',
      `${header('opens', ['KEYS[1]  a'])}--- @include "open-transition"\nreturn 1\n`,
      /uses KEYS\[2\]/,
    ],
    [
      'code using an ARGV its header does not declare',
      'argv-1.lua',
      `${header('argv', ['KEYS[1]  a'], ['ARGV[1]  one'])}return ARGV[2]\n`,
      /uses ARGV\[2\], which its header does not declare/,
    ],
    [
      'a header naming another script',
      'renamed-1.lua',
      header('old-name', ['KEYS[1]  a']),
      /opens its header with "old-name: a script written by a test\."; the first line names the script: "renamed: <what it does>"/,
    ],
    ['no header', 'bare-1.lua', 'return KEYS[1]\n', /does not open with a --\[\[ \.\.\. \]\] header/],
    ['no ARGV line', 'noargs-1.lua', header('noargs', ['KEYS[1]  a'], []), /declares no ARGV/],
    [
      'a file not named <name>-<n>.lua',
      'helper.lua',
      header('helper', []),
      /lua\/helper\.lua is not named <name>-<numberOfKeys>\.lua or <name>-N\.lua/,
    ],
  ])('refuses at load %s, naming the file', (_, file, text, message) => {
    const dir = luaDirWith({ [file]: text });
    const error = refusal(() => ScriptLibrary.load(dir));
    expect(error.message).toMatch(message);
    expect(error.file).toBe(file);
  });

  it('refuses two files of one name', () => {
    const dir = luaDirWith({ 'claim-3.lua': header('claim', ['KEYS[1]  a', 'KEYS[2]  b', 'KEYS[3]  c']) });
    expect(refusal(() => ScriptLibrary.load(dir)).message).toMatch(/lua\/claim-3\.lua and lua\/claim-4\.lua are both the script claim/);
  });

  it('refuses a name no file has, and fewer keys than a script takes, with a typed error before anything is sent', () => {
    const redis = fixture.connect();
    expect(refusal(() => runScript(redis, 'complete-clam', [], [])).message).toMatch(
      /no script is named "complete-clam": lua\/ has no file complete-clam-<numberOfKeys>\.lua/,
    );
    expect(refusal(() => scriptEntry(redis, 'claim', ['{k}a', '{k}b'], [])).message).toMatch(/script claim takes 4 keys; got 2/);
    expect(refusal(() => scriptSource('../package.json')).message).toMatch(/no script file/);
  });

  it('another copy of the package on the same connection, with a script of the same name, does not replace this one', async () => {
    const redis = fixture.connect();
    // What a second copy (another release, as a dependency of a dependency) might register under the plain name.
    redis.defineCommand('inspect', { numberOfKeys: 1, lua: 'return "the other copy"' });
    const key = `${fixture.handle().prefix}:none`;
    expect(await runScript(redis, 'inspect', [key], [])).toEqual([expect.any(Number), -2]);
    expect(await receiptsConnection(redis).batch([scriptEntry(redis, 'inspect', [key], [])])).toEqual([[null, [expect.any(Number), -2]]]);
  });
});

describe('defineScripts (deprecated)', () => {
  it('still gives a package script another name on a connection, once', async () => {
    const redis = fixture.connect();
    const def = { name: 'testInspect', file: 'inspect-1.lua', numberOfKeys: 1 };
    defineScripts(redis, [def]);
    defineScripts(redis, [def]);
    expect(await runScript(redis, 'testInspect', [`${fixture.handle().prefix}:none`], [])).toEqual([expect.any(Number), -2]);
    expect(() => runScript(fixture.connect(), 'testInspect', [], [])).toThrow(ScriptDefinitionError);
  });

  it('refuses a key count that disagrees with the file name, a reused name, or a file the package does not have', () => {
    const redis = fixture.connect();
    expect(refusal(() => defineScripts(redis, [{ name: 'x1', file: 'claim-4.lua', numberOfKeys: 1 }])).message).toMatch(
      /takes 4 keys, not 1/,
    );
    expect(refusal(() => defineScripts(redis, [{ name: 'x1', file: 'tally-N.lua', numberOfKeys: 2 }])).message).toMatch(
      /takes any keys, not 2/,
    );
    defineScripts(redis, [{ name: 'x2', file: 'claim-4.lua', numberOfKeys: 4 }]);
    expect(() => defineScripts(redis, [{ name: 'x2', file: 'fail-3.lua', numberOfKeys: 3 }])).toThrow(/already defined/);
    expect(() => defineScripts(redis, [{ name: 'claim', file: 'fail-3.lua', numberOfKeys: 3 }])).toThrow(
      /already defined from claim-4\.lua/,
    );
    expect(() => defineScripts(redis, [{ name: 'x3', file: 'nope-1.lua', numberOfKeys: 1 }])).toThrow(ScriptDefinitionError);
  });
});

describe('expandIncludes', () => {
  const from = (files: Record<string, string>) => (name: string) => files[name];
  const thrown = (run: () => unknown): ScriptIncludeError => {
    try {
      run();
    } catch (error) {
      expect(error).toBeInstanceOf(ScriptIncludeError);
      return error as ScriptIncludeError;
    }
    throw new Error('expected a ScriptIncludeError');
  };

  it('replaces an include line with the include, in place, with or without .lua', () => {
    const read = from({ one: '-- one\nlocal function one() end\n', two: 'local function two() end' });
    expect(expandIncludes('a-1.lua', '--[[ h ]]\n--- @include "one"\n---@include "two.lua"\nreturn 1\n', read)).toBe(
      '--[[ h ]]\n-- one\nlocal function one() end\nlocal function two() end\nreturn 1\n',
    );
    expect(expandIncludes('a-1.lua', 'return 1', read)).toBe('return 1');
  });

  it('expands each include once per script, first where it is first needed, also through nested includes', () => {
    const read = from({ base: 'BASE', mid: '--- @include "base"\nMID', top: '--- @include "mid"\n--- @include "base"\nTOP' });
    expect(expandIncludes('a-1.lua', '--- @include "top"\n--- @include "base"\n--- @include "mid"\nBODY', read)).toBe(
      'BASE\nMID\nTOP\nBODY',
    );
    expect(expandIncludes('b-1.lua', '--- @include "base"\n--- @include "base"\nBODY', read)).toBe('BASE\nBODY');
    // The once-rule is per script: another script gets its own copy.
    expect(expandIncludes('c-1.lua', '--- @include "mid"\nBODY', read)).toBe('BASE\nMID\nBODY');
  });

  it('names the script and the include when an include is missing, also when a nested include is', () => {
    const direct = thrown(() => expandIncludes('claim-4.lua', '--- @include "nope"\n', from({})));
    expect(direct).toMatchObject({ code: 'redis.script_include', problem: 'missing', script: 'claim-4.lua', include: 'nope', chain: [] });
    expect(direct.message).toMatch(/claim-4\.lua/);
    expect(direct.message).toMatch(/lua\/includes\/nope\.lua/);

    const nested = thrown(() => expandIncludes('fail-3.lua', '--- @include "outer"\n', from({ outer: '--- @include "inner"' })));
    expect(nested).toMatchObject({ problem: 'missing', script: 'fail-3.lua', include: 'inner', chain: ['outer'] });
    expect(nested.message).toMatch(/fail-3\.lua.*"inner".*via outer/);
  });

  it('refuses a cycle of includes, naming the whole loop', () => {
    const read = from({ a: '--- @include "b"\nA', b: '--- @include "c"\nB', c: '--- @include "a"\nC', self: '--- @include "self"' });
    const cycle = thrown(() => expandIncludes('x-1.lua', '--- @include "a"\n', read));
    expect(cycle).toMatchObject({
      code: 'redis.script_include',
      problem: 'cycle',
      script: 'x-1.lua',
      include: 'a',
      chain: ['a', 'b', 'c'],
    });
    expect(cycle.message).toContain('a -> b -> c -> a');
    expect(thrown(() => expandIncludes('x-1.lua', '--- @include "self"', read))).toMatchObject({ problem: 'cycle', include: 'self' });
  });

  it('refuses an include line that does not name a plain include in quotes', () => {
    const read = from({ one: 'ONE' });
    for (const line of ['--- @include one', '--- @include "../one"', '--- @include "sub/one"', '--- @include ""', '--- @include']) {
      expect(
        thrown(() => expandIncludes('x-1.lua', `${line}\nBODY`, read)),
        line,
      ).toMatchObject({ problem: 'malformed', script: 'x-1.lua' });
    }
    // Lines that only look alike are left alone.
    expect(expandIncludes('x-1.lua', '-- @include "one"\nlocal s = \'--- @include "one"\'', read)).toBe(
      '-- @include "one"\nlocal s = \'--- @include "one"\'',
    );
  });
});

describe('scriptSource with includes', () => {
  it('expands the package includes once per script and caches the result per file', () => {
    const source = scriptSource('complete-4.lua');
    expect(source).toMatch(/^--\[\[\n {2}complete:/);
    expect(source).not.toContain('@include');
    for (const fn of ['serverNow', 'receiptOf', 'observation', 'holdsFence']) {
      expect(source.match(new RegExp(`local function ${fn}\\(`, 'g')), fn).toHaveLength(1);
    }
    expect(source.indexOf('local function receiptOf(')).toBeLessThan(source.indexOf('local function holdsFence('));
    expect(scriptSource('complete-4.lua')).toBe(source);
  });

  it('runs an expanded script on Redis', async () => {
    const redis = fixture.connect();
    const prefix = fixture.handle().prefix;
    const keys = [`${prefix}:rcpt:{x}`, `${prefix}:run:{x}`, `${prefix}:brk:{x}`];
    const reply = (await runScript(redis, 'complete', keys, [1, '', 1000, 'tool:rejections', 'epoch'])) as unknown[];
    expect(reply).toEqual([0, '', 0, 0, 0, '', '', '', expect.any(Number), 0, '']);
  });
});
