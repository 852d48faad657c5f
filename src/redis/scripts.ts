/**
 * Loads the package's Lua scripts and registers them on an ioredis connection
 * with `defineCommand`, so ioredis sends EVALSHA and falls back to EVAL when
 * the server answers NOSCRIPT (after a restart or SCRIPT FLUSH).
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
import type { RedisConnection, RedisPipeline } from './connection.js';
import { ToolReceiptsError } from '../core/errors.js';

/** One script to register: the command name, its file in `lua/`, and how many KEYS it takes. */
export interface ScriptDefinition {
  /** Name of the command added to the connection. Pick one that cannot clash with a Redis command. */
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
/** Per connection: each script name defined on it, with its file and the command it is registered under. */
const defined = new WeakMap<object, Map<string, { readonly file: string; readonly command: string }>>();
/** Per script name: every command it was registered under (one per file it was defined from), for pipelines. */
const commandsOf = new Map<string, Set<string>>();

/** The command `name` defined from `file` is registered under: the name, then 12 hex digits of the text's SHA-1. */
function commandName(name: string, file: string): string {
  return `${name}_${createHash('sha1').update(scriptSource(file)).digest('hex').slice(0, 12)}`;
}

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
  let names = defined.get(redis);
  if (!names) {
    names = new Map();
    defined.set(redis, names);
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
    const numberOfKeys = script.numberOfKeys === 'any' ? undefined : script.numberOfKeys;
    const command = commandName(script.name, script.file);
    redis.defineCommand(command, { numberOfKeys, lua: scriptSource(script.file) });
    names.set(script.name, { file: script.file, command });
    let commands = commandsOf.get(script.name);
    if (!commands) commandsOf.set(script.name, (commands = new Set()));
    commands.add(command);
  }
}

type ScriptArg = string | number | Buffer;
type ScriptFn = (...args: ScriptArg[]) => Promise<unknown>;

/** Runs a script defined with {@link defineScripts} on a connection. */
export function runScript(redis: RedisConnection, name: string, keys: readonly string[], args: readonly ScriptArg[]): Promise<unknown> {
  const command = defined.get(redis)?.get(name)?.command;
  const fn = command === undefined ? undefined : (redis as unknown as Record<string, ScriptFn | undefined>)[command];
  if (typeof fn !== 'function') {
    throw new ScriptDefinitionError(`script ${name} is not defined on this connection; call defineScripts first`);
  }
  return fn.call(redis, ...keys, ...args);
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

/** Queues a defined script on a pipeline or MULTI of the connection it was defined on. */
export function queueScript(pipeline: RedisPipeline, name: string, keys: readonly string[], args: readonly ScriptArg[]): void {
  // A pipeline has the commands of its connection, which holds one of the script's commands at most.
  const methods = pipeline as unknown as Record<string, ((...a: ScriptArg[]) => unknown) | undefined>;
  let fn: ((...a: ScriptArg[]) => unknown) | undefined;
  for (const command of commandsOf.get(name) ?? []) {
    fn = methods[command];
    if (typeof fn === 'function') break;
  }
  if (typeof fn !== 'function') {
    throw new ScriptDefinitionError(`script ${name} is not available on this pipeline; call defineScripts first`);
  }
  fn.call(pipeline, ...keys, ...args);
}
