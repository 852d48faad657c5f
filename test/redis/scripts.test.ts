import { describe, expect, it } from 'vitest';
import { ScriptDefinitionError, defineScripts, runScript, scriptSource } from '../../src/redis/scripts.js';
import { useRedis } from './helpers.js';

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
    expect(() => defineScripts(redis, [{ name: 'x1', file: 'claim-2.lua', numberOfKeys: 1 }])).toThrow(ScriptDefinitionError);
    defineScripts(redis, [{ name: 'x2', file: 'claim-2.lua', numberOfKeys: 2 }]);
    expect(() => defineScripts(redis, [{ name: 'x2', file: 'fail-2.lua', numberOfKeys: 2 }])).toThrow(/already defined/);
    expect(() => scriptSource('../package.json')).toThrow(ScriptDefinitionError);
  });

  it('refuses to run a script not defined on that connection', () => {
    const redis = fixture.connect();
    expect(() => runScript(redis, 'neverDefined', [], [])).toThrow(expect.objectContaining({ code: 'redis.script_definition' }));
  });
});
