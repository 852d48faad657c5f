/**
 * The loader drops the included functions a script never calls: each would
 * cost a closure on every call. What is left must run exactly as before.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { pruneUnusedFunctions } from '../../src/redis/scripts/script-pruning.js';
import { packageScripts, ScriptLibrary } from '../../src/redis/scripts/scripts.js';
import { useRedis } from '../support/redis-fixture.js';

const fixture = useRedis();

const definedNames = (source: string) => [...source.matchAll(/^local function (\w+)/gm)].map((match) => match[1]!);
const lineCount = (source: string) => source.split('\n').length;

describe('pruneUnusedFunctions', () => {
  it('drops a function nothing calls, and a helper only it called, keeping the line breaks', () => {
    const source = [
      'local function helper() return 1 end',
      'local function unused()',
      '  if true then return helper() end',
      'end',
      'local function used(n)',
      '  for i = 1, n do n = n + 1 end',
      '  return n',
      'end',
      'return used(2)',
    ].join('\n');
    const pruned = pruneUnusedFunctions(source);
    expect(definedNames(pruned)).toEqual(['used']);
    expect(lineCount(pruned)).toBe(lineCount(source));
    expect(pruned.split('\n')[8]).toBe('return used(2)');
  });

  it('counts no name in a string or a comment, and keeps a function any code names, also as a field', () => {
    const source = [
      'local function inString() return 1 end',
      'local function inComment() return 2 end',
      'local function inLongString() return 3 end',
      'local function asField() return 4 end',
      "local label = 'inString' .. [==[ inLongString ]==]",
      '-- inComment',
      '--[[ inComment',
      '  inString ]]',
      'local t = { asField = 1 }',
      'return t.asField',
    ].join('\n');
    expect(definedNames(pruneUnusedFunctions(source))).toEqual(['asField']);
  });

  it('keeps functions that only call each other (it errs on keeping) and leaves nested definitions alone', () => {
    const source = [
      'local pong',
      'local function ping(n) if n > 0 then return pong(n - 1) end return 0 end',
      'pong = function(n) return ping(n) end',
      'local function outer()',
      '  local function inner() return 1 end',
      '  return 2',
      'end',
      'return 0',
    ].join('\n');
    const pruned = pruneUnusedFunctions(source);
    expect(pruned).toContain('local function ping');
    expect(pruned).not.toContain('local function outer');
    expect(pruned).not.toContain('local function inner');
  });

  it('returns a source whose blocks do not balance as it is', () => {
    for (const source of ['local function a() if x then return 1 end\nreturn 2', 'local function a() end end\nreturn 1']) {
      expect(pruneUnusedFunctions(source)).toBe(source);
    }
  });

  /** A random script: functions f0..fn-1, each calling some earlier ones inside a block, and naming others only in strings and comments. */
  const program = fc
    .integer({ min: 1, max: 7 })
    .chain((count) =>
      fc.record({
        calls: fc.tuple(...Array.from({ length: count }, (_, i) => fc.subarray(Array.from({ length: i }, (_, j) => j)))),
        decoys: fc.tuple(...Array.from({ length: count }, () => fc.subarray(Array.from({ length: count }, (_, j) => j)))),
        blocks: fc.array(fc.constantFrom('plain', 'if', 'for', 'while', 'do', 'repeat'), {
          minLength: count * count,
          maxLength: count * count,
        }),
        main: fc.subarray(Array.from({ length: count }, (_, j) => j)),
      }),
    )
    .map(({ calls, decoys, blocks, main }) => {
      const lines: string[] = [];
      calls.forEach((callees, i) => {
        lines.push(`local function f${i}(x)`, `  local total = ${i + 1}`);
        for (const decoy of decoys[i]!) lines.push(`  -- f${decoy}`, `  local s${decoy} = 'f${decoy}' .. [[f${decoy}]]`);
        callees.forEach((callee, k) => {
          const call = `total = total + f${callee}(x + 1)`;
          const block = blocks[(i * calls.length + k) % blocks.length]!;
          if (block === 'plain') lines.push(`  ${call}`);
          else if (block === 'if') lines.push(`  if x >= 0 then ${call} else total = 0 end`);
          else if (block === 'for') lines.push(`  for k = 1, 2 do ${call} end`);
          else if (block === 'while') lines.push(`  local w = 0`, `  while w < 1 do w = w + 1; ${call} end`);
          else if (block === 'do') lines.push(`  do ${call} end`);
          else lines.push(`  repeat ${call} until true`);
        });
        lines.push('  return total', 'end');
      });
      lines.push(`return 0${main.map((j) => ` + f${j}(0)`).join('')}`);
      const reachable = new Set<number>();
      const visit = (j: number) => {
        if (reachable.has(j)) return;
        reachable.add(j);
        calls[j]!.forEach(visit);
      };
      main.forEach(visit);
      return { source: lines.join('\n'), kept: [...reachable].sort((a, b) => a - b).map((j) => `f${j}`) };
    });

  it('keeps exactly the functions the script reaches, and what is left returns what the whole did, on Redis', async () => {
    const redis = fixture.connect();
    await fc.assert(
      fc.asyncProperty(program, async ({ source, kept }) => {
        const pruned = pruneUnusedFunctions(source);
        expect(definedNames(pruned)).toEqual(kept);
        expect(lineCount(pruned)).toBe(lineCount(source));
        expect(pruneUnusedFunctions(pruned)).toBe(pruned);
        expect(await redis.eval(pruned, 0)).toEqual(await redis.eval(source, 0));
      }),
      { numRuns: 60 },
    );
  });
});

describe('the package scripts', () => {
  it('are loaded pruned: every top-level function left is called, and each script still loads on Redis', async () => {
    const redis = fixture.connect();
    const scripts = packageScripts();
    for (const name of scripts.names) {
      const { source, sha } = scripts.script(name).lua;
      expect(pruneUnusedFunctions(source), name).toBe(source);
      expect(await redis.script('LOAD', source), name).toBe(sha);
    }
  });

  it('drop what their includes bring and they never call', () => {
    // includes/observe-receipt.lua defines openReceipt: the heartbeat calls it, the claim does not.
    const claim = packageScripts().script('claim').lua.source;
    expect(definedNames(claim)).not.toContain('openReceipt');
    expect(definedNames(claim)).toContain('openReceiptHash');
    expect(definedNames(packageScripts().script('heartbeat').lua.source)).toContain('openReceipt');
    // The loader reads the same files either way: a library loaded from the package's lua/ agrees.
    const again = ScriptLibrary.load(new URL('../../lua/', import.meta.url)).script('claim').lua.source;
    expect(again).toBe(claim);
  });
});
