/**
 * Each script's return codes, called directly (no store logic in between),
 * plus static checks on the script files themselves.
 */
import { readFileSync, readdirSync } from 'node:fs';
import type { Redis } from 'ioredis';
import { beforeAll, describe, expect, it } from 'vitest';
import { breakerField } from '../../src/redis/keys.js';
import { parseClaimObservation, parseObservation, type ClaimObservation, type Observation } from '../../src/redis/observation.js';
import { RECEIPT_SCRIPTS, RECONCILE_SCRIPTS, SCRIPT } from '../../src/redis/receipt-scripts.js';
import { defineScripts, runScript, scriptSource } from '../../src/redis/scripts.js';
import { useRedis, waitUntil } from '../support/redis-fixture.js';

const fixture = useRedis();
let redis: Redis;
let n = 0;

beforeAll(() => {
  redis = fixture.connect();
  defineScripts(redis, RECEIPT_SCRIPTS);
});

/** Receipt, run index, breaker hash and counting set of one fresh call, all under the same hash tag. */
type Keys = [receipt: string, index: string, breaker: string, count: string];

function keysFor(): Keys {
  n += 1;
  const tag = `{t${n}|r}`;
  const prefix = fixture.handle().prefix;
  return [`${prefix}:rcpt:${tag}:tool:h`, `${prefix}:run:${tag}`, `${prefix}:brk:${tag}`, `${prefix}:cnt:${tag}`];
}

const KEY_COUNT = new Map(RECEIPT_SCRIPTS.map((s) => [s.name, s.numberOfKeys]));

/**
 * Runs `script` with the keys it is defined with: claim and complete take all
 * four, the other transitions the receipt, the run index and the counting set.
 */
function send(script: string, keys: readonly string[], args: readonly (string | number)[]): Promise<unknown> {
  const count = KEY_COUNT.get(script);
  if (count === undefined || count === 'any') throw new Error(`unknown script ${script}`);
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
    SCRIPT.claim,
    await send(SCRIPT.claim, keys, [lease, RETENTION, 'w1', effect, 't', 'r', 'tool', 'h', REMOVED, REJECTIONS, epoch]),
  );
/** ARGV of complete-4 for `attempt` and a result text. */
const completeArgs = (attempt: number, result: string, epoch = EPOCH) => [attempt, result, RETENTION, REJECTIONS, epoch];
/** ARGV of fail-3. */
const failArgs = (attempt: number, error = 'boom', tier = 'neutral', epoch = EPOCH) => [attempt, error, tier, RETENTION, epoch];

async function expiredRunning(keys: Keys, effect: string): Promise<Observation> {
  await claim(keys, effect, 60);
  return waitUntil(() => claim(keys, effect), (o) => o.leaseExpired, 10_000, 'lease expiry');
}

/** `source` with every Lua comment blanked out, keeping positions and line breaks. */
function withoutComments(source: string): string {
  const blank = (m: string) => m.replace(/[^\n]/g, ' ');
  return source.replace(/--\[\[[\s\S]*?\]\]/g, blank).replace(/--[^\n]*/g, blank);
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
    params: m[2]!.split(',').map((p) => p.trim()).filter((p) => p !== ''),
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
    expect(keysNotFromKeys("return redis.call(ARGV[1], KEYS[1])")).toEqual([expect.stringContaining('not a literal')]);
  });
});

describe('script files', () => {
  const dir = new URL('../../lua/', import.meta.url);
  const includesDir = new URL('includes/', dir);
  const ours = [...RECEIPT_SCRIPTS, ...RECONCILE_SCRIPTS].map((s) => s.file).concat('breaker-record-1.lua');
  const allScripts = readdirSync(dir).filter((f) => f.endsWith('.lua'));
  const includes = readdirSync(includesDir).filter((f) => f.endsWith('.lua'));

  it.each(ours)('%s opens with a comment listing KEYS, ARGV (when any) and the return codes', (file) => {
    const text = readFileSync(new URL(file, dir), 'utf8');
    const header = /^--\[\[([\s\S]*?)\]\]/.exec(text)?.[1] ?? '';
    const keyCount = Number(/-(\d+)\.lua$/.exec(file)?.[1]);
    for (let i = 1; i <= keyCount; i++) expect(header).toContain(`KEYS[${i}]`);
    expect(header).not.toContain(`KEYS[${keyCount + 1}]`);
    if (/ARGV\[/.test(text.slice(header.length))) expect(header).toContain('ARGV[1]');
    expect(header).toMatch(/Returns/);
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

  it.each(includes)('include %s opens with a comment naming the functions it defines, defines nothing else, and uses no KEYS, ARGV or rcall of its own', (file) => {
    const text = readFileSync(new URL(file, includesDir), 'utf8');
    const header = /^--\[\[([\s\S]*?)\]\]/.exec(text)?.[1];
    expect(header, `${file} opens with --[[ ... ]]`).toBeDefined();
    const defined = [...text.matchAll(/^local function (\w+)\(/gm)].map((m) => m[1]!);
    expect(defined.length).toBeGreaterThan(0);
    for (const name of defined) expect(header, `${name} in the header of ${file}`).toContain(`${name}(`);
    const code = withoutComments(text);
    expect(code).not.toMatch(/\bKEYS\b|\bARGV\b/);
    expect(code).not.toMatch(/\brcall\b/);
    expect(code.replace(/^local function \w+\(.*$/gm, '').match(/^local\s+\w/gm) ?? []).toEqual([]);
  });

  it.each(allScripts)('%s defines each function once after expansion, and every include it names is expanded', (file) => {
    const source = scriptSource(file);
    const names = [...source.matchAll(/^local function (\w+)\(/gm)].map((m) => m[1]!);
    expect(new Set(names).size, names.join(', ')).toBe(names.length);
    const raw = readFileSync(new URL(file, dir), 'utf8');
    for (const [, name] of raw.matchAll(/^--- @include "([\w-]+)"/gm)) {
      const included = readFileSync(new URL(`${name}.lua`, includesDir), 'utf8');
      expect(source).toContain(withoutComments(included).trim().split('\n')[0]);
    }
  });

  it('every .lua file of the receipt store is registered, and file names carry the key count', () => {
    const files = readdirSync(dir).filter((f) => f.endsWith('.lua') && !f.startsWith('offload-'));
    for (const f of ours) expect(files).toContain(f);
    for (const s of RECEIPT_SCRIPTS) expect(s.file).toMatch(new RegExp(`-${s.numberOfKeys === 'any' ? 'N' : s.numberOfKeys}\\.lua$`));
  });
});

describe('claim-4', () => {
  it('1: creates a running receipt at attempt 1 with a lease on the server clock', async () => {
    const keys = keysFor();
    const o = await claim(keys, 'opaque', 5_000);
    expect(o).toMatchObject({ code: 1, status: 'running', attempts: 1, leaseExpired: false, leaseRemainingMs: 5_000, effect: 'opaque' });
    expect(o.leaseUntilMs).toBe(o.nowMs + 5_000);
    expect(o.epoch).toBe(EPOCH);
    expect(await redis.hget(keys[0], 'epoch')).toBe(EPOCH);
    expect(await redis.zscore(keys[1], keys[0])).toBe(String(o.nowMs));
    const pttl = await redis.pttl(keys[0]);
    expect(pttl).toBeGreaterThan(RETENTION);
    expect(pttl).toBeLessThanOrEqual(RETENTION + 5_000);
  });

  it('0: reports an existing receipt without writing', async () => {
    const keys = keysFor();
    await claim(keys);
    const before = await redis.hgetall(keys[0]);
    const o = await claim(keys, 'opaque');
    expect(o).toMatchObject({ code: 0, status: 'running', attempts: 1, leaseExpired: false, effect: 'resumable' });
    expect(o.leaseRemainingMs).toBeGreaterThan(0);
    expect(await redis.hgetall(keys[0])).toEqual(before);
  });

  it('0: a completed receipt comes back with its result', async () => {
    const keys = keysFor();
    await claim(keys);
    await call(SCRIPT.complete, keys, completeArgs(1, '{"a":1}'));
    expect(await claim(keys)).toMatchObject({ code: 0, status: 'completed', attempts: 1, resultText: '{"a":1}' });
  });

  it('reports the breaker: no removal and a streak of 0 without a breaker hash, which it does not create', async () => {
    const keys = keysFor();
    expect(await claim(keys)).toMatchObject({ code: 1, toolRemoval: null, rejectionStreak: 0 });
    expect(await claim(keys)).toMatchObject({ code: 0, toolRemoval: null, rejectionStreak: 0 });
    expect(await redis.exists(keys[2])).toBe(0);
  });

  it('1: creates as usual while the tool has a rejection streak, and reports the streak; other tools do not count', async () => {
    const keys = keysFor();
    await redis.hset(keys[2], REJECTIONS, 3, breakerField('other', 'removed'), 'other tool gone');
    const o = await claim(keys);
    expect(o).toMatchObject({ code: 1, status: 'running', attempts: 1, toolRemoval: null, rejectionStreak: 3 });
    expect(await redis.exists(keys[0])).toBe(1);
  });

  it('2: a removed tool with no receipt: nothing claimed, nothing written', async () => {
    const keys = keysFor();
    await redis.hset(keys[2], REMOVED, 'tool was removed after a destructive failure.', REJECTIONS, 2);
    const breakerBefore = await redis.hgetall(keys[2]);
    const o = await claim(keys, 'opaque');
    expect(o).toMatchObject({
      code: 2,
      status: null,
      attempts: 0,
      leaseExpired: false,
      leaseRemainingMs: 0,
      leaseUntilMs: null,
      toolRemoval: 'tool was removed after a destructive failure.',
      rejectionStreak: 2,
    });
    expect(await redis.exists(keys[0])).toBe(0);
    expect(await redis.exists(keys[1])).toBe(0);
    expect(await redis.zscore(keys[1], keys[0])).toBeNull();
    expect(await redis.hgetall(keys[2])).toEqual(breakerBefore);
    // Asking again changes nothing either.
    expect(await claim(keys)).toMatchObject({ code: 2, status: null });
    expect(await redis.exists(keys[0], keys[1])).toBe(0);
  });

  it('2: a removal stored with an empty reason still counts as removed', async () => {
    const keys = keysFor();
    await redis.hset(keys[2], REMOVED, '');
    expect(await claim(keys)).toMatchObject({ code: 2, status: null, toolRemoval: 'removed' });
    expect(await redis.exists(keys[0], keys[1])).toBe(0);
  });

  it('0: an existing receipt of a removed tool is reported with the removal; nothing written', async () => {
    const keys = keysFor();
    await claim(keys);
    await call(SCRIPT.fail, keys, failArgs(1));
    await redis.hset(keys[2], REMOVED, 'gone', REJECTIONS, 1);
    const before = await redis.hgetall(keys[0]);
    const o = await claim(keys);
    expect(o).toMatchObject({ code: 0, status: 'failed', attempts: 1, toolRemoval: 'gone', rejectionStreak: 1 });
    expect(await redis.hgetall(keys[0])).toEqual(before);

    const done = keysFor();
    await claim(done);
    await call(SCRIPT.complete, done, completeArgs(1, '"r"'));
    await redis.hset(done[2], REMOVED, 'gone later');
    expect(await claim(done)).toMatchObject({ code: 0, status: 'completed', resultText: '"r"', toolRemoval: 'gone later' });
  });
});

describe('complete-4 and the rejection streak', () => {
  /** Runs `write` while `key` is WATCHed on another connection; true when the write touched `key`. */
  async function touches(key: string, write: () => Promise<unknown>): Promise<boolean> {
    const watcher = fixture.connect();
    await watcher.watch(key);
    await write();
    const exec = await watcher.multi().ping().exec();
    return exec === null;
  }

  it('1: resets a streak above 0 and touches no other field; a removed tool stays removed; the TTL is kept', async () => {
    const keys = keysFor();
    await claim(keys);
    await redis.hset(keys[2], REJECTIONS, 4, breakerField('tool', 'failures'), 2, REMOVED, 'gone', breakerField('other', 'rejections'), 3);
    await redis.pexpire(keys[2], 50_000);
    expect(await touches(keys[2], () => call(SCRIPT.complete, keys, completeArgs(1, '"ok"')))).toBe(true);
    expect(await redis.hgetall(keys[2])).toEqual({
      [REJECTIONS]: '0',
      [breakerField('tool', 'failures')]: '2',
      [REMOVED]: 'gone',
      [breakerField('other', 'rejections')]: '3',
    });
    const pttl = await redis.pttl(keys[2]);
    expect(pttl).toBeGreaterThan(0);
    expect(pttl).toBeLessThanOrEqual(50_000);
    expect(await redis.hget(keys[0], 'status')).toBe('completed');
  });

  it('1: leaves a streak of 0 alone and never creates a breaker hash', async () => {
    const zero = keysFor();
    await claim(zero);
    await redis.hset(zero[2], REJECTIONS, 0, breakerField('tool', 'failures'), 1);
    const before = await redis.hgetall(zero[2]);
    expect(await touches(zero[2], () => call(SCRIPT.complete, zero, completeArgs(1, '')))).toBe(false);
    expect(await redis.hgetall(zero[2])).toEqual(before);

    const unset = keysFor();
    await claim(unset);
    await redis.hset(unset[2], breakerField('tool', 'failures'), 1);
    expect(await touches(unset[2], () => call(SCRIPT.complete, unset, completeArgs(1, '')))).toBe(false);
    expect(await redis.hgetall(unset[2])).toEqual({ [breakerField('tool', 'failures')]: '1' });

    const missing = keysFor();
    await claim(missing);
    expect(await call(SCRIPT.complete, missing, completeArgs(1, '"ok"'))).toMatchObject({ code: 1, status: 'completed' });
    expect(await redis.exists(missing[2])).toBe(0);
  });

  it('0: fenced out, the streak is left as it is', async () => {
    const keys = keysFor();
    await claim(keys);
    await redis.hset(keys[2], REJECTIONS, 2);
    expect(await touches(keys[2], () => call(SCRIPT.complete, keys, completeArgs(2, '"late"')))).toBe(false);
    expect(await redis.hget(keys[2], REJECTIONS)).toBe('2');
    const missing = keysFor();
    await redis.hset(missing[2], REJECTIONS, 2);
    expect(await call(SCRIPT.complete, missing, completeArgs(1, ''))).toMatchObject({ code: 0, status: null });
    expect(await redis.hget(missing[2], REJECTIONS)).toBe('2');
  });
});

describe('reclaim-3', () => {
  const reclaim = (keys: Keys, status: string, attempts: number, effect = 'resumable', epoch = EPOCH) =>
    call(SCRIPT.reclaim, keys, [status, attempts, 10_000, RETENTION, 'w2', epoch, effect]);

  it('1: takes over a failed receipt as attempt + 1 and clears the failure', async () => {
    const keys = keysFor();
    await claim(keys);
    await call(SCRIPT.fail, keys, failArgs(1));
    expect(await reclaim(keys, 'failed', 1, 'resumable', 'another-lifetime')).toMatchObject({ code: 0, status: 'failed' });
    const o = await reclaim(keys, 'failed', 1);
    expect(o).toMatchObject({ code: 1, status: 'running', attempts: 2, leaseRemainingMs: 10_000, epoch: EPOCH });
    const h = await redis.hgetall(keys[0]);
    expect(h).toMatchObject({ status: 'running', attempts: '2', owner: 'w2' });
    expect(h.error).toBeUndefined();
    expect(h.tier).toBeUndefined();
    expect(h.completed_ms).toBeUndefined();
  });

  it('1: takes over an expired resumable attempt and keeps its steps', async () => {
    const keys = keysFor();
    await claim(keys, 'resumable', 60);
    await call(SCRIPT.recordStep, keys, [1, 'step:a', '1', RETENTION, EPOCH]);
    await expiredRunning(keys, 'resumable');
    expect(await reclaim(keys, 'running', 1)).toMatchObject({ code: 1, attempts: 2 });
    expect(await redis.hget(keys[0], 'step:a')).toBe('1');
  });

  it('0: refuses a live lease, a stale observation, an opaque effect, a settled or a missing receipt', async () => {
    const live = keysFor();
    await claim(live);
    expect(await reclaim(live, 'running', 1)).toMatchObject({ code: 0, status: 'running', attempts: 1, leaseExpired: false });

    const stale = keysFor();
    await claim(stale);
    await call(SCRIPT.fail, stale, failArgs(1, 'x', ''));
    expect(await reclaim(stale, 'failed', 2)).toMatchObject({ code: 0, status: 'failed', attempts: 1 });
    expect(await reclaim(stale, 'running', 1)).toMatchObject({ code: 0, status: 'failed' });

    const opaque = keysFor();
    await expiredRunning(opaque, 'opaque');
    expect(await reclaim(opaque, 'running', 1)).toMatchObject({ code: 0, status: 'running', leaseExpired: true, effect: 'opaque' });

    // A resumable receipt is not taken over by a claim that asks for opaque, nor once a claim flagged it.
    const asked = keysFor();
    await expiredRunning(asked, 'resumable');
    expect(await reclaim(asked, 'running', 1, 'opaque')).toMatchObject({ code: 0, attempts: 1 });
    expect(await call(SCRIPT.flagAmbiguous, asked, [1, RETENTION, EPOCH, 'opaque'])).toMatchObject({ code: 1 });
    expect(await reclaim(asked, 'running', 1, 'resumable')).toMatchObject({ code: 0, attempts: 1 });

    const done = keysFor();
    await claim(done);
    await call(SCRIPT.complete, done, completeArgs(1, ''));
    expect(await reclaim(done, 'completed', 1)).toMatchObject({ code: 0, status: 'completed' });

    expect(await reclaim(keysFor(), 'failed', 1)).toMatchObject({ code: 0, status: null });
  });
});

describe.each([
  ['complete-4', SCRIPT.complete, (a: number, e = EPOCH) => completeArgs(a, '"ok"', e), 'completed'],
  ['fail-3', SCRIPT.fail, (a: number, e = EPOCH) => failArgs(a, 'err', 'neutral', e), 'failed'],
  ['heartbeat-3', SCRIPT.heartbeat, (a: number, e = EPOCH) => [a, 20_000, RETENTION, e], 'running'],
  ['record-step-3', SCRIPT.recordStep, (a: number, e = EPOCH) => [a, 'step:s', '"v"', RETENTION, e], 'running'],
] as const)('%s', (_name, script, args, after) => {
  it(`1: writes for the owning attempt (status then ${after})`, async () => {
    const keys = keysFor();
    await claim(keys);
    const o = await call(script, keys, args(1));
    expect(o).toMatchObject({ code: 1, status: after, attempts: 1 });
    expect(await redis.hget(keys[0], 'status')).toBe(after);
  });

  it('0: fenced out for another attempt, a settled receipt, or no receipt; nothing written', async () => {
    const keys = keysFor();
    await claim(keys);
    const before = await redis.hgetall(keys[0]);
    expect(await call(script, keys, args(2))).toMatchObject({ code: 0, status: 'running', attempts: 1 });
    expect(await call(script, keys, args(1, 'another-lifetime'))).toMatchObject({ code: 0, status: 'running', attempts: 1, epoch: EPOCH });
    expect(await call(script, keys, args(1, ''))).toMatchObject({ code: 0, status: 'running', attempts: 1 });
    expect(await redis.hgetall(keys[0])).toEqual(before);

    await call(SCRIPT.complete, keys, completeArgs(1, ''));
    const settled = await redis.hgetall(keys[0]);
    expect(await call(script, keys, args(1))).toMatchObject({ code: 0, status: 'completed', attempts: 1 });
    expect(await redis.hgetall(keys[0])).toEqual(settled);

    const missing = keysFor();
    expect(await call(script, missing, args(1))).toMatchObject({ code: 0, status: null, attempts: 0 });
    expect(await redis.exists(missing[0])).toBe(0);
  });
});

describe('flag-ambiguous-3', () => {
  const flag = (keys: Keys, attempts = 1, effect = 'opaque', epoch = EPOCH) =>
    call(SCRIPT.flagAmbiguous, keys, [attempts, RETENTION, epoch, effect]);

  it('1 then 2: flags once from TIME and keeps the first time; 0 while the lease is live or when gone', async () => {
    const keys = keysFor();
    await claim(keys, 'opaque', 60);
    expect(await flag(keys)).toMatchObject({ code: 0, leaseExpired: false });
    await expiredRunning(keys, 'opaque');
    expect(await flag(keys, 1, 'opaque', 'another-lifetime')).toMatchObject({ code: 0, ambiguousMs: null });
    const first = await flag(keys);
    expect(first).toMatchObject({ code: 1, status: 'running', leaseExpired: true });
    expect(first.ambiguousMs).toBe(first.nowMs);
    const second = await flag(keys);
    expect(second).toMatchObject({ code: 2, ambiguousMs: first.ambiguousMs });
    expect(await flag(keys, 2)).toMatchObject({ code: 0, attempts: 1 });
    expect(await flag(keysFor())).toMatchObject({ code: 0, status: null });
  });

  it('0 for an expired resumable receipt asked as resumable; once flagged, it stays flagged for every effect and a live lease', async () => {
    const keys = keysFor();
    await expiredRunning(keys, 'resumable');
    expect(await flag(keys, 1, 'resumable')).toMatchObject({ code: 0, ambiguousMs: null });
    const first = await flag(keys, 1, 'opaque');
    expect(first.code).toBe(1);
    expect(await flag(keys, 1, 'resumable')).toMatchObject({ code: 2, ambiguousMs: first.ambiguousMs });
    // The attempt heartbeats late: the lease is live again, the verdict stands (code 2, contested).
    const beat = await call(SCRIPT.heartbeat, keys, [1, 20_000, RETENTION, EPOCH]);
    expect(beat).toMatchObject({ code: 2, leaseExpired: false, ambiguousMs: first.ambiguousMs });
    expect(await redis.hget(keys[0], 'late_heartbeat_ms')).toBe(String(beat.nowMs));
    expect(await flag(keys, 1, 'resumable')).toMatchObject({ code: 2, leaseExpired: false, ambiguousMs: first.ambiguousMs });
    // A late settle: code 2, recorded next to ambiguous_ms.
    const late = await call(SCRIPT.complete, keys, completeArgs(1, '"landed"'));
    expect(late).toMatchObject({ code: 2, status: 'completed', ambiguousMs: first.ambiguousMs });
    expect(await redis.hgetall(keys[0])).toMatchObject({
      ambiguous_ms: String(first.ambiguousMs),
      late_settle_ms: String(late.nowMs),
      late_settle_attempt: '1',
    });
  });
});

describe('resolve-3', () => {
  it('1: settles an ambiguous receipt; 0 on other attempts; 3 while not ambiguous', async () => {
    const live = keysFor();
    await claim(live, 'opaque');
    expect(await call(SCRIPT.resolve, live, [1, 'completed', '1', RETENTION, ''])).toMatchObject({ code: 3, leaseExpired: false });

    // Flagged, then heartbeated late: contested (4) while the lease is live.
    const contested = keysFor();
    await expiredRunning(contested, 'opaque');
    await call(SCRIPT.flagAmbiguous, contested, [1, RETENTION, EPOCH, 'opaque']);
    await call(SCRIPT.heartbeat, contested, [1, 20_000, RETENTION, EPOCH]);
    const before = await redis.hgetall(contested[0]);
    expect(await call(SCRIPT.resolve, contested, [1, 'failed', 'x', RETENTION, ''])).toMatchObject({ code: 4, leaseExpired: false });
    expect(await redis.hgetall(contested[0])).toEqual(before);

    const resumable = keysFor();
    await expiredRunning(resumable, 'resumable');
    expect(await call(SCRIPT.resolve, resumable, [1, 'failed', 'x', RETENTION, ''])).toMatchObject({ code: 3, leaseExpired: true });
    await call(SCRIPT.flagAmbiguous, resumable, [1, RETENTION, EPOCH, 'opaque']);
    expect(await call(SCRIPT.resolve, resumable, [1, 'failed', 'operator: not sent', RETENTION, ''])).toMatchObject({ code: 1, status: 'failed' });
    expect(await redis.hget(resumable[0], 'error')).toBe('operator: not sent');

    const opaque = keysFor();
    await expiredRunning(opaque, 'opaque');
    expect(await call(SCRIPT.resolve, opaque, [2, 'completed', '1', RETENTION, ''])).toMatchObject({ code: 0, attempts: 1 });
    expect(await call(SCRIPT.resolve, opaque, [1, 'completed', '1', RETENTION, 'another-lifetime'])).toMatchObject({ code: 0, attempts: 1 });
    const done = await call(SCRIPT.resolve, opaque, [1, 'completed', '{"id":7}', RETENTION, EPOCH]);
    expect(done).toMatchObject({ code: 1, status: 'completed', resultText: '{"id":7}' });
    const h = await redis.hgetall(opaque[0]);
    expect(h).toMatchObject({ status: 'completed', result: '{"id":7}', resolved_ms: String(done.nowMs) });
    expect(h.lease_until_ms).toBeUndefined();
    expect(await call(SCRIPT.resolve, opaque, [1, 'completed', '1', RETENTION, ''])).toMatchObject({ code: 0, status: 'completed' });
    expect(await call(SCRIPT.resolve, keysFor(), [1, 'completed', '1', RETENTION, ''])).toMatchObject({ code: 0, status: null });
  });
});

describe('inspect-1 and prune-index-2', () => {
  it('inspect returns now, PTTL and the fields; -2 and nothing else when missing', async () => {
    const keys = keysFor();
    await claim(keys);
    const reply = (await runScript(redis, SCRIPT.inspect, [keys[0]], [])) as unknown[];
    expect(typeof reply[0]).toBe('number');
    expect(reply[1]).toBeGreaterThan(0);
    expect(reply).toContain('status');
    expect(await runScript(redis, SCRIPT.inspect, [keysFor()[0]], [])).toEqual([expect.any(Number), -2]);
  });

  it('prune removes an index entry only when its receipt is gone', async () => {
    const keys = keysFor();
    await claim(keys);
    expect(await runScript(redis, SCRIPT.pruneIndex, [keys[1], keys[0]], [])).toBe(0);
    await redis.del(keys[0]);
    expect(await runScript(redis, SCRIPT.pruneIndex, [keys[1], keys[0]], [])).toBe(1);
    expect(await runScript(redis, SCRIPT.pruneIndex, [keys[1], keys[0]], [])).toBe(0);
    expect(await redis.zcard(keys[1])).toBe(0);
  });

  it('prune re-scores an entry whose score is not its receipt\'s created_ms', async () => {
    const keys = keysFor();
    const created = await claim(keys);
    await redis.zadd(keys[1], 5, keys[0]);
    expect(await runScript(redis, SCRIPT.pruneIndex, [keys[1], keys[0]], [])).toBe(2);
    expect(await redis.zscore(keys[1], keys[0])).toBe(String(created.nowMs));
    expect(await runScript(redis, SCRIPT.pruneIndex, [keys[1], keys[0]], [])).toBe(0);
  });
});

describe('corrupt keys', () => {
  /** Every transition, with ARGV that would write if the keys were sound. */
  const transitions: Array<[string, (keys: Keys) => Promise<unknown>]> = [
    ['claim', (keys) => send(SCRIPT.claim, keys, [10_000, RETENTION, 'w1', 'opaque', 't', 'r', 'tool', 'h', REMOVED, REJECTIONS, EPOCH])],
    ['complete', (keys) => send(SCRIPT.complete, keys, completeArgs(1, '"x"'))],
    ['fail', (keys) => send(SCRIPT.fail, keys, failArgs(1))],
    ['heartbeat', (keys) => send(SCRIPT.heartbeat, keys, [1, 20_000, RETENTION, EPOCH])],
    ['recordStep', (keys) => send(SCRIPT.recordStep, keys, [1, 'step:s', '1', RETENTION, EPOCH])],
    ['flagAmbiguous', (keys) => send(SCRIPT.flagAmbiguous, keys, [1, RETENTION, EPOCH, 'opaque'])],
    ['outcomeUnknown', (keys) => send(SCRIPT.outcomeUnknown, keys, [1, 'timed out', RETENTION, EPOCH])],
    ['reclaim', (keys) => send(SCRIPT.reclaim, keys, ['running', 1, 10_000, RETENTION, 'w2', EPOCH, 'resumable'])],
    ['resolve', (keys) => send(SCRIPT.resolve, keys, [1, 'failed', 'x', RETENTION, ''])],
    ['inspect', (keys) => send(SCRIPT.inspect, keys, [])],
  ];
  const corruptions: Array<[string, (keys: Keys) => Promise<unknown>, RegExp]> = [
    ['a receipt hash without status', (k) => redis.hset(k[0], 'attempts', 1, 'result', '"old"', 'epoch', EPOCH), /no status/],
    ['a receipt with attempts 0', (k) => redis.hset(k[0], 'status', 'running', 'attempts', 0, 'epoch', EPOCH), /attempts/],
    ['a receipt key holding a string', (k) => redis.set(k[0], 'x'), /is a string, not a hash/],
    ['a run index holding a hash', (k) => redis.hset(k[1], 'x', 1), /is a hash, not a zset/],
  ];

  it.each(corruptions)('%s: every transition answers TRC_CORRUPT and writes nothing', async (_label, corrupt, why) => {
    for (const [name, run] of transitions) {
      if (name === 'inspect' && _label.includes('index')) continue; // inspect reads the receipt only
      if (name === 'inspect' && !_label.includes('string')) continue; // inspect returns a hash as it is
      const keys = keysFor();
      await corrupt(keys);
      const before = await Promise.all(keys.map((k) => redis.dump(k)));
      const error = await run(keys).then(() => undefined, (e: unknown) => e);
      expect(error, name).toBeInstanceOf(Error);
      expect((error as Error).message, name).toMatch(/^TRC_CORRUPT /);
      expect((error as Error).message, name).toMatch(why);
      expect(await Promise.all(keys.map((k) => redis.dump(k))), name).toEqual(before);
    }
  });

  it('a breaker hash of the wrong type stops claim and complete before they write', async () => {
    for (const [name, run] of transitions.filter(([n]) => n === 'claim' || n === 'complete')) {
      const keys = keysFor();
      if (name === 'complete') await claim(keys);
      await redis.set(keys[2], 'x');
      const before = await Promise.all(keys.map((k) => redis.dump(k)));
      await expect(run(keys), name).rejects.toThrow(/TRC_CORRUPT .*is a string, not a hash/);
      expect(await Promise.all(keys.map((k) => redis.dump(k))), name).toEqual(before);
    }
  });
});
