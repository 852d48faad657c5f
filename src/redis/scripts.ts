/**
 * Loads the package's Lua scripts and registers them on an ioredis connection
 * with `defineCommand`, so ioredis sends EVALSHA and falls back to EVAL when
 * the server answers NOSCRIPT (after a restart or SCRIPT FLUSH).
 */
import { readFileSync } from 'node:fs';
import type { ChainableCommander, Redis } from 'ioredis';
import { ToolReceiptsError } from '../core/errors.js';

/** One script to register: the command name, its file in `lua/`, and how many KEYS it takes. */
export interface ScriptDefinition {
  /** Name of the command added to the connection. Pick one that cannot clash with a Redis command. */
  readonly name: string;
  /** File name inside the package's `lua/` directory, e.g. `claim-2.lua`. */
  readonly file: string;
  /** Number of KEYS; must match the `-<n>.lua` suffix of `file`. */
  readonly numberOfKeys: number;
}

/** A script was used on a connection before it was defined, or its definition is inconsistent. */
export class ScriptDefinitionError extends ToolReceiptsError {
  readonly code = 'redis.script_definition';
}

const sourceCache = new Map<string, string>();
const defined = new WeakMap<object, Map<string, string>>();

/** The text of `lua/<file>`, read once per process. */
export function scriptSource(file: string): string {
  if (!/^[A-Za-z0-9_-]+-\d+\.lua$/.test(file)) {
    throw new ScriptDefinitionError(`script file name ${JSON.stringify(file)} is not <name>-<numberOfKeys>.lua`);
  }
  let source = sourceCache.get(file);
  if (source === undefined) {
    source = readFileSync(new URL(`../../lua/${file}`, import.meta.url), 'utf8');
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
export function defineScripts(redis: Redis, scripts: readonly ScriptDefinition[]): void {
  let names = defined.get(redis);
  if (!names) {
    names = new Map();
    defined.set(redis, names);
  }
  for (const script of scripts) {
    const suffix = /-(\d+)\.lua$/.exec(script.file)?.[1];
    if (suffix === undefined || Number(suffix) !== script.numberOfKeys) {
      throw new ScriptDefinitionError(
        `script ${script.name}: file ${script.file} does not end in -${script.numberOfKeys}.lua`,
      );
    }
    const previous = names.get(script.name);
    if (previous !== undefined) {
      if (previous !== script.file) {
        throw new ScriptDefinitionError(
          `command ${script.name} is already defined from ${previous}, not ${script.file}`,
        );
      }
      continue;
    }
    redis.defineCommand(script.name, { numberOfKeys: script.numberOfKeys, lua: scriptSource(script.file) });
    names.set(script.name, script.file);
  }
}

type ScriptArg = string | number | Buffer;
type ScriptFn = (...args: ScriptArg[]) => Promise<unknown>;

/** Runs a script defined with {@link defineScripts} on a connection. */
export function runScript(redis: Redis, name: string, keys: readonly string[], args: readonly ScriptArg[]): Promise<unknown> {
  const fn = (redis as unknown as Record<string, ScriptFn | undefined>)[name];
  if (typeof fn !== 'function' || !defined.get(redis)?.has(name)) {
    throw new ScriptDefinitionError(`script ${name} is not defined on this connection; call defineScripts first`);
  }
  return fn.call(redis, ...keys, ...args);
}

/** Queues a defined script on a pipeline or MULTI of the connection it was defined on. */
export function queueScript(pipeline: ChainableCommander, name: string, keys: readonly string[], args: readonly ScriptArg[]): void {
  const fn = (pipeline as unknown as Record<string, ((...a: ScriptArg[]) => unknown) | undefined>)[name];
  if (typeof fn !== 'function') {
    throw new ScriptDefinitionError(`script ${name} is not available on this pipeline; call defineScripts first`);
  }
  fn.call(pipeline, ...keys, ...args);
}
