/**
 * Loads the package's Lua scripts and registers them by name on a
 * connection; the connection's adapter sends EVALSHA and falls back to EVAL
 * when the server answers NOSCRIPT (after a restart or SCRIPT FLUSH).
 *
 * Each is registered under its name and the start of its text's SHA-1, not
 * its name alone: two copies of the package in one process (two releases, one
 * a dependency of the other) may share a connection, and a second definition
 * under the same command name would replace the first, so one copy would run
 * the other's scripts.
 *
 * A script may share code through `--- @include "<name>"` lines: each such
 * line is replaced by `lua/includes/<name>.lua` (itself expanded the same
 * way) when the script is read, so Redis only ever sees one self-contained
 * script per command.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { receiptsConnection, type BatchEntry, type LuaScript, type RedisConnection } from './connection.js';
import { ToolReceiptsError } from '../core/errors.js';

/** One script to register: the command name, its file in `lua/`, and how many KEYS it takes. */
export interface ScriptDefinition {
  /** Name the script is run by. Pick one that cannot clash with another package's scripts. */
  readonly name: string;
  /** File name inside the package's `lua/` directory, e.g. `claim-4.lua`. */
  readonly file: string;
  /**
   * Number of KEYS; must match the `-<n>.lua` suffix of `file`. `'any'` for a
   * script that takes however many keys it is given (file `<name>-N.lua`), all
   * still of one hash tag.
   */
  readonly numberOfKeys: number | 'any';
}

/** A script was used on a connection before it was defined, or its definition is inconsistent. */
export class ScriptDefinitionError extends ToolReceiptsError {
  readonly code = 'redis.script_definition';
}

/** Why an `@include` line could not be expanded. */
export type ScriptIncludeProblem = 'missing' | 'cycle' | 'malformed';

/**
 * A script's `--- @include` line names no file in `lua/includes/`, is not of
 * the form `--- @include "<name>"`, or includes form a cycle. `chain` is the
 * path of includes from the script down to the failing one.
 */
export class ScriptIncludeError extends ToolReceiptsError {
  readonly code = 'redis.script_include';
  readonly script: string;
  readonly include: string;
  readonly problem: ScriptIncludeProblem;
  readonly chain: readonly string[];

  constructor(script: string, include: string, problem: ScriptIncludeProblem, chain: readonly string[]) {
    const via = chain.length > 0 ? ` (via ${chain.join(' -> ')})` : '';
    const what =
      problem === 'missing'
        ? `includes ${JSON.stringify(include)}${via}, but lua/includes/${include}.lua does not exist`
        : problem === 'cycle'
          ? `has an include cycle: ${[...chain, include].join(' -> ')}`
          : `has a malformed include line ${JSON.stringify(include)}${via}; write --- @include "<name>"`;
    super(`script ${script} ${what}`);
    this.script = script;
    this.include = include;
    this.problem = problem;
    this.chain = chain;
  }
}

/** A line `--- @include …`; what follows `@include` is checked by {@link expandIncludes}. */
const INCLUDE_LINE = /^\s*---\s*@include\b(.*)$/;
/** `"<name>"` or `"<name>.lua"`, a plain file name inside `lua/includes/`. */
const INCLUDE_NAME = /^\s+"([A-Za-z0-9_-]+)(?:\.lua)?"\s*$/;

/**
 * Replaces every `--- @include "<name>"` line of `source` (the text of
 * `script`) with the text `readInclude(name)` returns, expanded the same way.
 * An include that was already expanded earlier in the same script, directly or
 * through another include, is dropped, so each is defined once and before its
 * first use. `readInclude` returns `undefined` for an include that does not
 * exist. Throws {@link ScriptIncludeError} for a missing include, a malformed
 * include line, or a cycle.
 */
export function expandIncludes(
  script: string,
  source: string,
  readInclude: (name: string) => string | undefined,
): string {
  const done = new Set<string>();
  const expand = (text: string, chain: readonly string[]): string => {
    const out: string[] = [];
    for (const line of text.split('\n')) {
      const directive = INCLUDE_LINE.exec(line);
      if (!directive) {
        out.push(line);
        continue;
      }
      const name = INCLUDE_NAME.exec(directive[1] ?? '')?.[1];
      if (name === undefined) throw new ScriptIncludeError(script, line.trim(), 'malformed', chain);
      if (chain.includes(name)) throw new ScriptIncludeError(script, name, 'cycle', chain);
      if (done.has(name)) continue;
      const body = readInclude(name);
      if (body === undefined) throw new ScriptIncludeError(script, name, 'missing', chain);
      done.add(name);
      out.push(expand(body.replace(/\r?\n$/, ''), [...chain, name]));
    }
    return out.join('\n');
  };
  return expand(source, []);
}

const luaDir = new URL('../../lua/', import.meta.url);
const includesDir = new URL('includes/', luaDir);

function readPackageInclude(name: string): string | undefined {
  try {
    return readFileSync(new URL(`${name}.lua`, includesDir), 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}

const sourceCache = new Map<string, string>();
const scriptCache = new Map<string, LuaScript>();

/** A script registered on a connection under a name. */
interface Defined {
  readonly file: string;
  readonly script: LuaScript;
  /** The KEYS count, or `undefined` when the key count comes first in each call. */
  readonly numberOfKeys: number | undefined;
}

const defined = new WeakMap<object, Map<string, Defined>>();

/**
 * The text of `lua/<file>` with its `@include` lines expanded (see
 * {@link expandIncludes}), read and expanded once per process.
 */
export function scriptSource(file: string): string {
  if (!/^[A-Za-z0-9_-]+-(?:\d+|N)\.lua$/.test(file)) {
    throw new ScriptDefinitionError(`script file name ${JSON.stringify(file)} is not <name>-<numberOfKeys>.lua or <name>-N.lua`);
  }
  let source = sourceCache.get(file);
  if (source === undefined) {
    source = expandIncludes(file, readFileSync(new URL(file, luaDir), 'utf8'), readPackageInclude);
    sourceCache.set(file, source);
  }
  return source;
}

/**
 * Registers each script on `redis` once; calling it again for the same
 * connection and name is a no-op. Throws {@link ScriptDefinitionError} when a
 * name is reused for a different file, or the key count disagrees with the
 * file name.
 */
export function defineScripts(redis: RedisConnection, scripts: readonly ScriptDefinition[]): void {
  const connection = receiptsConnection(redis);
  let names = defined.get(connection);
  if (!names) {
    names = new Map();
    defined.set(connection, names);
  }
  for (const script of scripts) {
    const suffix = /-(\d+|N)\.lua$/.exec(script.file)?.[1];
    const expected = script.numberOfKeys === 'any' ? 'N' : String(script.numberOfKeys);
    if (suffix !== expected) {
      throw new ScriptDefinitionError(`script ${script.name}: file ${script.file} does not end in -${expected}.lua`);
    }
    const previous = names.get(script.name);
    if (previous !== undefined) {
      if (previous.file !== script.file) {
        throw new ScriptDefinitionError(
          `command ${script.name} is already defined from ${previous.file}, not ${script.file}`,
        );
      }
      continue;
    }
    names.set(script.name, { file: script.file, script: luaScript(script.file), numberOfKeys: script.numberOfKeys === 'any' ? undefined : script.numberOfKeys });
  }
}

/** The script in `lua/<file>` with its SHA1, made once per process. */
export function luaScript(file: string): LuaScript {
  let script = scriptCache.get(file);
  if (!script) {
    const source = scriptSource(file);
    script = { file, source, sha: createHash('sha1').update(source).digest('hex') };
    scriptCache.set(file, script);
  }
  return script;
}

type ScriptArg = string | number | Buffer;

/**
 * The script registered as `name` and its KEYS and ARGV. `keys` then `args`
 * are read as one list: its first `numberOfKeys` values are KEYS, the rest
 * ARGV. A script defined with `numberOfKeys: 'any'` takes the key count first
 * (as `keys[0]`), then that many keys.
 */
function prepared(redis: RedisConnection, name: string, keys: readonly ScriptArg[], args: readonly ScriptArg[]): Extract<BatchEntry, { script: LuaScript }> {
  const found = defined.get(receiptsConnection(redis))?.get(name);
  if (!found) throw new ScriptDefinitionError(`script ${name} is not defined on this connection; call defineScripts first`);
  const all = [...keys, ...args];
  if (found.numberOfKeys !== undefined) {
    return { script: found.script, keys: all.slice(0, found.numberOfKeys).map(String), args: all.slice(found.numberOfKeys) };
  }
  const count = Number(all[0]);
  if (!Number.isSafeInteger(count) || count < 0 || count > all.length - 1) {
    throw new ScriptDefinitionError(`script ${name} takes the key count first; got ${String(all[0])} with ${all.length - 1} values after it`);
  }
  return { script: found.script, keys: all.slice(1, 1 + count).map(String), args: all.slice(1 + count) };
}

/** Runs a script defined with {@link defineScripts} on a connection. */
export function runScript(redis: RedisConnection, name: string, keys: readonly ScriptArg[], args: readonly ScriptArg[]): Promise<unknown> {
  const entry = prepared(redis, name, keys, args);
  return receiptsConnection(redis).evalScript(entry.script, entry.keys, entry.args);
}

/** Runs a script defined with `numberOfKeys: 'any'`: the key count goes first. */
export function runVariadicScript(
  redis: RedisConnection,
  name: string,
  keys: readonly string[],
  args: readonly ScriptArg[],
): Promise<unknown> {
  return runScript(redis, name, [String(keys.length), ...keys], args);
}

/** A defined script's run as an entry of a {@link ReceiptsConnection.batch} on the connection it was defined on. */
export function scriptEntry(redis: RedisConnection, name: string, keys: readonly ScriptArg[], args: readonly ScriptArg[]): BatchEntry {
  return prepared(redis, name, keys, args);
}
