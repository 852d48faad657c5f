/**
 * Each script's return codes, called directly (no store logic in between),
 * plus static checks on the script files themselves.
 */
import { readFileSync, readdirSync } from 'node:fs';
import type { Redis } from 'ioredis';
import { beforeAll, describe, expect, it } from 'vitest';
import { breakerField } from '../../src/redis/keys.js';
import { parseClaimObservation, parseObservation, type ClaimObservation, type Observation } from '../../src/redis/receipts/channel.js';
import { expandIncludes, packageScripts, runScript, scriptSource } from '../../src/redis/scripts/scripts.js';
import { useRedis, waitUntil } from '../support/redis-fixture.js';

const fixture = useRedis();
let redis: Redis;
let n = 0;

beforeAll(() => {
  redis = fixture.connect();
});

/** Receipt, run index, breaker hash and counting set of one fresh call, all under the same hash tag. */
type Keys = [receipt: string, index: string, breaker: string, count: string];

function keysFor(): Keys {
  n += 1;
  const tag = `{t${n}|r}`;
  const prefix = fixture.handle().prefix;
  return [`${prefix}:rcpt:${tag}:tool:h`, `${prefix}:run:${tag}`, `${prefix}:brk:${tag}`, `${prefix}:cnt:${tag}`];
}

/**
 * Runs `script` with the keys it is defined with: claim and complete take all
 * four, the other transitions the receipt, the run index and the counting set.
 */
function send(script: string, keys: readonly string[], args: readonly (string | number)[]): Promise<unknown> {
  const takes = packageScripts().script(script).keys;
  if (takes.kind !== 'fixed') throw new Error(`${script} takes any number of keys`);
  const count = takes.count;
  const chosen = count === 3 ? [keys[0]!, keys[1]!, keys[3]!] : keys.slice(0, count);
  return runScript(redis, script, chosen, args);
}

async function call(script: string, keys: readonly string[], args: readonly (string | number)[]): Promise<Observation> {
  return parseObservation(script, await send(script, keys, args));
}

const RETENTION = 60_000;
/** The breaker fields of the tool `tool`, the one every call here is for. */
const REMOVED = breakerField('tool', 'removed');
const REJECTIONS = breakerField('tool', 'rejections');
/** The epoch every claim here mints (each test uses keys of its own, so one value is enough). */
const EPOCH = 'epoch-1';
const claim = async (keys: Keys, effect = 'resumable', lease = 10_000, epoch = EPOCH): Promise<ClaimObservation> =>
  parseClaimObservation(
    'claim',
    await send('claim', keys, [lease, RETENTION, 'w1', effect, 't', 'r', 'tool', 'h', REMOVED, REJECTIONS, epoch]),
  );
/** ARGV of complete-4 for `attempt` and a result text. */
const completeArgs = (attempt: number, result: string, epoch = EPOCH) => [attempt, result, RETENTION, REJECTIONS, epoch];
/** ARGV of fail-3. */
const failArgs = (attempt: number, error = 'boom', tier = 'neutral', epoch = EPOCH) => [attempt, error, tier, RETENTION, epoch];

async function expiredRunning(keys: Keys, effect: string): Promise<Observation> {
  await claim(keys, effect, 60);
  return waitUntil(
    () => claim(keys, effect),
    (o) => o.leaseExpired,
    10_000,
    'lease expiry',
  );
}

/** `source` with every Lua comment blanked out, keeping positions and line breaks. */
function withoutComments(source: string): string {
  const blank = (m: string) => m.replace(/[^\n]/g, ' ');
  return source.replace(/--\[\[[\s\S]*?\]\]/g, blank).replace(/--[^\n]*/g, blank);
}

/** A line of an include that defines constants: `local NAME, OTHER = value, value`, upper-case names only. */
const CONSTANTS_LINE = /^local ([A-Z][A-Z0-9_]*(?:, [A-Z][A-Z0-9_]*)*) = .*$/gm;

/** The constants `source` defines on such lines. */
function includeConstants(source: string): string[] {
  return [...source.matchAll(CONSTANTS_LINE)].flatMap((m) => m[1]!.split(', '));
}

/** The top-level argument texts of the call whose `(` is at `open` in `text`. */
function callArgs(text: string, open: number): string[] {
  const args: string[] = [];
  let depth = 0;
  let start = open + 1;
  for (let i = open; i < text.length; i++) {
    const c = text[i];
    if (c === "'" || c === '"') {
      i = text.indexOf(c, i + 1);
      if (i < 0) break;
    } else if (c === '(' || c === '{' || c === '[') depth++;
    else if (c === ')' || c === '}' || c === ']') {
      depth--;
      if (depth === 0) {
        const last = text.slice(start, i).trim();
        if (last !== '' || args.length > 0) args.push(last);
        return args;
      }
    } else if (c === ',' && depth === 1) {
      args.push(text.slice(start, i).trim());
      start = i + 1;
    }
  }
  throw new Error(`unbalanced call at ${open}`);
}

/**
 * Every `redis.call` / `rcall` in the (expanded) script `source` whose key
 * does not come from KEYS, with the reason; empty when all do. A key counts
 * as from KEYS when it is `KEYS[n]`, a local bound once to `KEYS[n]`, or a
 * parameter of the enclosing `local function` that every call of that
 * function passes a key from KEYS (checked the same way, so a key may be
 * handed down through several functions).
 */
function keysNotFromKeys(source: string): string[] {
  const text = withoutComments(source);
  const functions = [...text.matchAll(/local\s+function\s+(\w+)\s*\(([^)]*)\)/g)].map((m) => ({
    name: m[1]!,
    params: m[2]!
      .split(',')
      .map((p) => p.trim())
      .filter((p) => p !== ''),
    at: m.index,
  }));
  const aliases = new Set(
    [...text.matchAll(/^[ \t]*local[ \t]+(\w+)[ \t]*=[ \t]*KEYS\[\d+\][ \t]*$/gm)]
      .map((m) => m[1]!)
      .filter((name) => text.match(new RegExp(`\\b${name}\\s*=(?!=)`, 'g'))?.length === 1),
  );
  const whyNot = (arg: string, at: number, seen: ReadonlySet<string>): string | undefined => {
    // KEYS[i] or KEYS[k + 2] with a loop variable: a script taking any number of keys (<name>-N.lua) walks them.
    if (/^KEYS\[(?:\d+|[a-z]\w*(?:\s*\+\s*\d+)?)\]$/.test(arg) || aliases.has(arg)) return undefined;
    const fn = functions.filter((f) => f.at < at).at(-1);
    const index = fn ? fn.params.indexOf(arg) : -1;
    if (!fn || index < 0) return `${arg} is not a KEYS key`;
    const param = `${fn.name}(${arg})`;
    if (seen.has(param)) return undefined;
    for (const call of text.matchAll(new RegExp(`(?<!function\\s+)\\b${fn.name}\\s*\\(`, 'g'))) {
      const passed = callArgs(text, call.index + call[0].length - 1)[index];
      const why = passed === undefined ? 'not passed' : whyNot(passed, call.index, new Set(seen).add(param));
      if (why !== undefined) return `${param} <- ${why}`;
    }
    return undefined;
  };
  const problems: string[] = [];
  for (const m of text.matchAll(/(?:\brcall|\bredis\.p?call)\s*\(/g)) {
    const args = callArgs(text, m.index + m[0].length - 1);
    const command = /^'([A-Z]+)'$/.exec(args[0] ?? '')?.[1];
    if (command === undefined) {
      problems.push(`${m[0]}${args[0] ?? ''}: the command is not a literal`);
      continue;
    }
    if (command === 'TIME') continue;
    const why = args[1] === undefined ? 'no key' : whyNot(args[1], m.index, new Set());
    if (why !== undefined) problems.push(`${command}: ${why}`);
  }
  return problems;
}

describe('the KEYS check itself', () => {
  const include = "local function touch(key, field)\n  return redis.call('HGET', key, field)\nend\n";
  const forward = 'local function outer(k)\n  return touch(k, ARGV[1])\nend\n';

  it('accepts keys from KEYS, passed directly, through a once-bound local, or down through functions', () => {
    expect(keysNotFromKeys(`${include}return touch(KEYS[1], 'a')`)).toEqual([]);
    expect(keysNotFromKeys(`local key = KEYS[2]\n${include}${forward}touch(key, 'a')\nreturn outer(KEYS[1])`)).toEqual([]);
    expect(keysNotFromKeys("local rcall = redis.call\nrcall('TIME')\nreturn rcall('GET', KEYS[1])")).toEqual([]);
  });

  it('flags a key built from ARGV or a string, wherever it is passed from, and a command that is not a literal', () => {
    expect(keysNotFromKeys(`${include}return touch('x:' .. ARGV[1], 'a')`)).toEqual([expect.stringContaining('touch(key)')]);
    expect(keysNotFromKeys(`${include}${forward}touch(KEYS[1], 'a')\nreturn outer(ARGV[2])`)).toEqual([
      expect.stringMatching(/touch\(key\) <- outer\(k\) <- ARGV\[2\]/),
    ]);
    expect(keysNotFromKeys("local key = KEYS[1]\nkey = ARGV[1]\nreturn redis.call('GET', key)")).toHaveLength(1);
    expect(keysNotFromKeys('return redis.call(ARGV[1], KEYS[1])')).toEqual([expect.stringContaining('not a literal')]);
  });
});

describe('script files', () => {
  const dir = new URL('../../lua/', import.meta.url);
  const includesDir = new URL('includes/', dir);
  const allScripts = readdirSync(dir)
    .filter((f) => f.endsWith('.lua'))
    .sort();
  const includes = readdirSync(includesDir).filter((f) => f.endsWith('.lua'));
  /** The one include that runs where it stands (the opening of a receipt transition); every other only defines functions. */
  const OPENING = 'open-transition.lua';

  it('every file in lua/ is a script run by its name, its header agreeing with its file name', () => {
    expect(packageScripts().names).toEqual(allScripts.map((f) => f.replace(/-(?:\d+|N)\.lua$/, '')));
    for (const file of allScripts) expect(packageScripts().byFile(file).file).toBe(file);
  });

  it('docs/receipts.md names every script in lua/', () => {
    const doc = readFileSync(new URL('../../docs/receipts.md', import.meta.url), 'utf8');
    expect(allScripts.filter((file) => !doc.includes(`\`${file}\``))).toEqual([]);
  });

  it('every script or include named in lua/, src/, docs/ and the README exists, and each header names its own file', () => {
    const root = new URL('../../', import.meta.url);
    const texts = [
      ...['lua/', 'lua/includes/'].flatMap((d) =>
        readdirSync(new URL(d, root))
          .filter((f) => f.endsWith('.lua'))
          .map((f) => `${d}${f}`),
      ),
      ...['src/', 'docs/'].flatMap((d) =>
        readdirSync(new URL(d, root), { recursive: true, encoding: 'utf8' })
          .filter((f) => /\.(ts|md)$/.test(f))
          .map((f) => `${d}${f}`),
      ),
      'README.md',
    ];
    const exists = new Set([...allScripts, ...includes.map((f) => `includes/${f}`)]);
    const missing: string[] = [];
    for (const path of texts) {
      const text = readFileSync(new URL(path, root), 'utf8');
      for (const [mention] of text.matchAll(/(?:includes\/)?[a-z0-9]+(?:-[a-z0-9]+)*-(?:\d+|N)\.lua|includes\/[a-z0-9-]+\.lua/g)) {
        if (!exists.has(mention.replace(/^lua\//, ''))) missing.push(`${path}: ${mention}`);
      }
    }
    expect(missing).toEqual([]);
    for (const file of includes) {
      const first = readFileSync(new URL(file, includesDir), 'utf8').split('\n')[1]?.trim() ?? '';
      expect(first, `the header of includes/${file}`).toMatch(new RegExp(`^${file.replace(/\.lua$/, '')}:`));
    }
  });

  it.each(allScripts)('%s, includes expanded, touches only keys passed in KEYS and reads time only from TIME', (file) => {
    const source = scriptSource(file);
    expect(source).not.toMatch(/@include/);
    const code = withoutComments(source);
    expect(code).not.toMatch(/os\.time|os\.clock/);
    expect(code).toMatch(/(?:rcall|redis\.call)\s*\(/);
    expect(keysNotFromKeys(source), file).toEqual([]);
    // A <name>-N.lua script takes any number of keys; the others no more than their name says.
    const keyCount = /-(\d+)\.lua$/.exec(file)?.[1];
    for (const key of keyCount === undefined ? [] : code.matchAll(/KEYS\[(\d+)\]/g)) {
      expect(Number(key[1]), `KEYS[${key[1]}] in ${file}`).toBeLessThanOrEqual(Number(keyCount));
    }
  });

  it.each(includes.filter((f) => f !== OPENING))(
    'include %s opens with a comment naming the functions and constants it defines, defines nothing else, and uses no KEYS, ARGV or rcall of its own',
    (file) => {
      const text = readFileSync(new URL(file, includesDir), 'utf8');
      const header = /^--\[\[([\s\S]*?)\]\]/.exec(text)?.[1];
      expect(header, `${file} opens with --[[ ... ]]`).toBeDefined();
      const defined = [...text.matchAll(/^local function (\w+)\(/gm)].map((m) => m[1]!);
      expect(defined.length).toBeGreaterThan(0);
      for (const name of defined) expect(header, `${name} in the header of ${file}`).toContain(`${name}(`);
      for (const name of includeConstants(text)) expect(header, `${name} in the header of ${file}`).toMatch(new RegExp(`\\b${name}\\b`));
      const code = withoutComments(text);
      expect(code).not.toMatch(/\bKEYS\b|\bARGV\b/);
      expect(code).not.toMatch(/\brcall\b/);
      const rest = code.replace(/^local function \w+\(.*$/gm, '').replace(CONSTANTS_LINE, '');
      expect(rest.match(/^local\s+\w/gm) ?? []).toEqual([]);
    },
  );

  it.each(allScripts)('%s defines each function once after expansion, and every include it names is expanded', (file) => {
    // As expanded, before the loader drops what the script never calls (test/redis/script-pruning.test.ts).
    const source = expandIncludes(file, readFileSync(new URL(file, dir), 'utf8'), (name) =>
      readFileSync(new URL(`${name}.lua`, includesDir), 'utf8'),
    );
    const names = [...source.matchAll(/^local function (\w+)\(/gm)].map((m) => m[1]!).concat(includeConstants(source));
    expect(new Set(names).size, names.join(', ')).toBe(names.length);
    const raw = readFileSync(new URL(file, dir), 'utf8');
    for (const [, name] of raw.matchAll(/^--- @include "([\w-]+)"/gm)) {
      const included = readFileSync(new URL(`${name}.lua`, includesDir), 'utf8');
      expect(source).toContain(withoutComments(included).trim().split('\n')[0]);
    }
  });

  it(`${OPENING}, the opening of a transition, names each local it defines and reads only the receipt, run index and counting set`, () => {
    const text = readFileSync(new URL(OPENING, includesDir), 'utf8');
    const header = /^--\[\[([\s\S]*?)\]\]/.exec(text)?.[1] ?? '';
    const code = withoutComments(text);
    expect(code).not.toMatch(/^local function/m);
    const locals = [...code.matchAll(/^local ([\w, ]+?) =/gm)].flatMap((m) => m[1]!.split(/,\s*/));
    expect(locals).toEqual(['rcall', 'now', 'receipt', 'corrupt']);
    for (const name of ['rcall', 'now', 'receipt']) expect(header).toMatch(new RegExp(`^\\s+${name}\\s`, 'm'));
    expect([...new Set([...code.matchAll(/KEYS\[(\d+)\]/g)].map((m) => m[1]))]).toEqual(['1', '2', '3']);
    expect(code).not.toMatch(/\bARGV\b/);
  });
});
