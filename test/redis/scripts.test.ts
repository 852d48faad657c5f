import { describe, expect, it } from 'vitest';
import {
  ScriptDefinitionError,
  ScriptIncludeError,
  defineScripts,
  expandIncludes,
  runScript,
  scriptEntry,
  scriptSource,
} from '../../src/redis/scripts.js';
import { receiptsConnection } from '../../src/redis/connection.js';
import { useRedis } from '../support/redis-fixture.js';

const fixture = useRedis();

describe('defineScripts', () => {
  it('reads lua/<file> and defines it once per connection', async () => {
    const redis = fixture.connect();
    const def = { name: 'testInspect', file: 'inspect-1.lua', numberOfKeys: 1 };
    expect(scriptSource('inspect-1.lua')).toMatch(/^--\[\[/);
    defineScripts(redis, [def]);
    defineScripts(redis, [def]);
    expect(await runScript(redis, 'testInspect', [`${fixture.handle().prefix}:none`], [])).toEqual([expect.any(Number), -2]);
  });

  it('refuses a key count that disagrees with the file name, a reused name, or a bad file name', () => {
    const redis = fixture.connect();
    expect(() => defineScripts(redis, [{ name: 'x1', file: 'claim-4.lua', numberOfKeys: 1 }])).toThrow(ScriptDefinitionError);
    defineScripts(redis, [{ name: 'x2', file: 'claim-4.lua', numberOfKeys: 4 }]);
    expect(() => defineScripts(redis, [{ name: 'x2', file: 'fail-3.lua', numberOfKeys: 3 }])).toThrow(/already defined/);
    expect(() => scriptSource('../package.json')).toThrow(ScriptDefinitionError);
  });

  it('another copy of the package defining its own script under the same name on the same connection does not replace this one', async () => {
    const redis = fixture.connect();
    defineScripts(redis, [{ name: 'sharedInspect', file: 'inspect-1.lua', numberOfKeys: 1 }]);
    // What a second copy (another release, as a dependency of a dependency) does with the plain name.
    redis.defineCommand('sharedInspect', { numberOfKeys: 1, lua: 'return "the other copy"' });
    const key = `${fixture.handle().prefix}:none`;
    expect(await runScript(redis, 'sharedInspect', [key], [])).toEqual([expect.any(Number), -2]);
    expect(await receiptsConnection(redis).batch([scriptEntry(redis, 'sharedInspect', [key], [])])).toEqual([[null, [expect.any(Number), -2]]]);
  });

  it('refuses to run a script not defined on that connection', () => {
    const redis = fixture.connect();
    expect(() => runScript(redis, 'neverDefined', [], [])).toThrow(expect.objectContaining({ code: 'redis.script_definition' }));
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
    expect(cycle).toMatchObject({ code: 'redis.script_include', problem: 'cycle', script: 'x-1.lua', include: 'a', chain: ['a', 'b', 'c'] });
    expect(cycle.message).toContain('a -> b -> c -> a');
    expect(thrown(() => expandIncludes('x-1.lua', '--- @include "self"', read))).toMatchObject({ problem: 'cycle', include: 'self' });
  });

  it('refuses an include line that does not name a plain include in quotes', () => {
    const read = from({ one: 'ONE' });
    for (const line of ['--- @include one', '--- @include "../one"', '--- @include "sub/one"', '--- @include ""', '--- @include']) {
      expect(thrown(() => expandIncludes('x-1.lua', `${line}\nBODY`, read)), line).toMatchObject({ problem: 'malformed', script: 'x-1.lua' });
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
    for (const fn of ['serverNow', 'readReceipt', 'observation', 'holdsFence']) {
      expect(source.match(new RegExp(`local function ${fn}\\(`, 'g')), fn).toHaveLength(1);
    }
    expect(source.indexOf('local function readReceipt(')).toBeLessThan(source.indexOf('local function holdsFence('));
    expect(scriptSource('complete-4.lua')).toBe(source);
  });

  it('defines and runs an expanded script on Redis', async () => {
    const redis = fixture.connect();
    defineScripts(redis, [{ name: 'testComplete', file: 'complete-4.lua', numberOfKeys: 4 }]);
    const prefix = fixture.handle().prefix;
    const keys = [`${prefix}:rcpt:{x}`, `${prefix}:run:{x}`, `${prefix}:brk:{x}`];
    const reply = (await runScript(redis, 'testComplete', keys, [1, '', 1000, 'tool:rejections', 'epoch'])) as unknown[];
    expect(reply).toEqual([0, '', 0, 0, 0, '', '', '', expect.any(Number), 0, '']);
  });
});
