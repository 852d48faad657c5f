/**
 * The Lua scripts, found by their file names as BullMQ finds its own: every
 * `lua/<name>-<numKeys>.lua` is the script `<name>` taking that many KEYS,
 * and `lua/<name>-N.lua` the script `<name>` taking any number (the count
 * passed first). Callers run a script by that name (`runScript(redis,
 * 'complete-claim', keys, args)`); adding a file is all it takes to call it.
 *
 * The directory is read once per process, on first use: each file's includes
 * are expanded (`./script-includes.ts`) and its header checked against its
 * name (`./script-header.ts`), so a file whose header declares other KEYS
 * than its name says is refused before any script runs.
 *
 * Nothing names a script on the connection itself: each copy of the package
 * keeps its own table of scripts and sends each by the SHA-1 of its own text
 * (EVALSHA, and the text again when the server answers NOSCRIPT). Two copies
 * in one process (two releases, one a dependency of the other) may share a
 * connection and scripts of the same name, and each still runs its own; a
 * command registered on the client by name (ioredis' `defineCommand`) would
 * let the second definition replace the first.
 */
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import {
  receiptsConnection,
  type BatchEntry,
  type LuaScript,
  type ReceiptsConnection,
  type RedisConnection,
} from '../connection/connection.js';
import { isReceiptsConnection } from '../connection/clients/types.js';
import { ScriptDefinitionError } from './script-errors.js';
import { checkScriptHeader, type ScriptKeys } from './script-header.js';
import { expandIncludes } from './script-includes.js';
import { functionLibraryOf } from './script-functions.js';
import { pruneUnusedFunctions } from './script-pruning.js';

export { ScriptDefinitionError, ScriptIncludeError, type ScriptIncludeProblem } from './script-errors.js';
export { expandIncludes } from './script-includes.js';
export type { ScriptKeys } from './script-header.js';

/** One script of a {@link ScriptLibrary}: `lua/<name>-<n>.lua` with its includes expanded. */
export interface Script {
  /** The name it is run by: the file name without its key count, `complete-claim` for `complete-claim-5.lua`. */
  readonly name: string;
  /** The file inside the directory, e.g. `complete-claim-5.lua`. */
  readonly file: string;
  /** The KEYS it takes, as its header declares them (and its file name says). */
  readonly keys: ScriptKeys;
  /** Its text and SHA-1, as sent to Redis. */
  readonly lua: LuaScript;
}

type ScriptArg = string | number | Buffer;
/** A script's run as an entry of a {@link ReceiptsConnection.batch}. */
export type ScriptEntry = Extract<BatchEntry, { script: LuaScript }>;

const FILE_NAME = /^([A-Za-z0-9_-]+)-(?:\d+|N)\.lua$/;

/** Every script of one `lua/` directory, by name. */
export class ScriptLibrary {
  private readonly byName: ReadonlyMap<string, Script>;
  private readonly byFileName: ReadonlyMap<string, Script>;

  private constructor(scripts: readonly Script[]) {
    this.byName = new Map(scripts.map((s) => [s.name, s]));
    this.byFileName = new Map(scripts.map((s) => [s.file, s]));
  }

  /**
   * Reads every `*.lua` file of `dir` (its `includes/` folder holds what
   * they include). Throws {@link ScriptDefinitionError} for a file not named
   * `<name>-<n>.lua` or `<name>-N.lua`, two files of one name, or a header
   * that disagrees with its file name (see `checkScriptHeader`), and
   * `ScriptIncludeError` for an include that cannot be expanded.
   */
  static load(dir: URL): ScriptLibrary {
    const includes = new URL('includes/', dir);
    const readInclude = (name: string): string | undefined => {
      try {
        return readFileSync(new URL(`${name}.lua`, includes), 'utf8');
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
        throw error;
      }
    };
    const files = readdirSync(dir, { withFileTypes: true })
      .filter((entry) => entry.isFile() && entry.name.endsWith('.lua'))
      .map((entry) => entry.name)
      .sort();
    const scripts: Script[] = [];
    const seen = new Map<string, string>();
    for (const file of files) {
      const expanded = expandIncludes(file, readFileSync(new URL(file, dir), 'utf8'), readInclude);
      const keys = checkScriptHeader(file, expanded);
      // What the includes bring in and the script never calls would cost a closure on every call.
      const source = pruneUnusedFunctions(expanded);
      const name = FILE_NAME.exec(file)![1]!;
      const other = seen.get(name);
      if (other !== undefined)
        throw new ScriptDefinitionError(`lua/${other} and lua/${file} are both the script ${name}: one file a name`, file);
      seen.set(name, file);
      const sha = createHash('sha1').update(source).digest('hex');
      scripts.push({ name, file, keys, lua: { file, source, sha, function: functionLibraryOf(source, sha) } });
    }
    return new ScriptLibrary(scripts);
  }

  /** The names of its scripts, in the order of their files. */
  get names(): string[] {
    return [...this.byName.keys()];
  }

  /** The script run as `name`, or `undefined`. */
  find(name: string): Script | undefined {
    return this.byName.get(name);
  }

  /** The script run as `name`. Throws {@link ScriptDefinitionError} when no file is named for it. */
  script(name: string): Script {
    const script = this.byName.get(name);
    if (script === undefined) {
      throw new ScriptDefinitionError(
        `no script is named ${JSON.stringify(name)}: lua/ has no file ${name}-<numberOfKeys>.lua or ${name}-N.lua`,
      );
    }
    return script;
  }

  /** The script in file `file` (`claim-4.lua`). Throws {@link ScriptDefinitionError} when there is none. */
  byFile(file: string): Script {
    const script = this.byFileName.get(file);
    if (script === undefined) throw new ScriptDefinitionError(`lua/ has no script file ${JSON.stringify(file)}`, file);
    return script;
  }

  /**
   * `name`'s run with `keys` then `args`, read as one list: its first KEYS
   * count of values are KEYS, the rest ARGV. A variadic script takes the key
   * count first (as `keys[0]`), then that many keys. Throws
   * {@link ScriptDefinitionError} for an unknown name, or fewer keys than the
   * script takes.
   */
  entry(name: string, keys: readonly ScriptArg[], args: readonly ScriptArg[]): ScriptEntry {
    return entryOf(this.script(name), keys, args);
  }

  /** Runs `name` on `redis`; arguments as {@link entry}. */
  run(redis: RedisConnection, name: string, keys: readonly ScriptArg[], args: readonly ScriptArg[]): Promise<unknown> {
    const entry = this.entry(name, keys, args);
    return receiptsConnection(redis).evalScript(entry.script, entry.keys, entry.args);
  }
}

/** Whether every value is a string: KEYS that need no conversion. */
function allText(values: readonly ScriptArg[]): values is readonly string[] {
  for (const value of values) if (typeof value !== 'string') return false;
  return true;
}

function entryOf(script: Script, keys: readonly ScriptArg[], args: readonly ScriptArg[]): ScriptEntry {
  // How every transition calls: exactly the script's KEYS, as text, then its ARGV. Nothing to split or copy.
  if (script.keys.kind === 'fixed' && keys.length === script.keys.count && allText(keys)) return { script: script.lua, keys, args };
  const all = [...keys, ...args];
  if (script.keys.kind === 'fixed') {
    const count = script.keys.count;
    if (all.length < count)
      throw new ScriptDefinitionError(`script ${script.name} takes ${count} keys; got ${all.length} values in all`, script.file);
    return { script: script.lua, keys: all.slice(0, count).map(String), args: all.slice(count) };
  }
  const count = Number(all[0]);
  if (!Number.isSafeInteger(count) || count < script.keys.atLeast || count > all.length - 1) {
    throw new ScriptDefinitionError(
      `script ${script.name} takes the key count first, at least ${script.keys.atLeast}; got ${String(all[0])} with ${all.length - 1} values after it`,
      script.file,
    );
  }
  return { script: script.lua, keys: all.slice(1, 1 + count).map(String), args: all.slice(1 + count) };
}

let packaged: ScriptLibrary | undefined;

/** The package's own scripts (its `lua/` directory), read once per process. */
export function packageScripts(): ScriptLibrary {
  packaged ??= ScriptLibrary.load(new URL('../../../lua/', import.meta.url));
  return packaged;
}

/** The text of the package's `lua/<file>` (`claim-4.lua`) with its includes expanded. */
export function scriptSource(file: string): string {
  return packageScripts().byFile(file).lua.source;
}

/** The package's script in `lua/<file>` with its SHA-1. */
export function luaScript(file: string): LuaScript {
  return packageScripts().byFile(file).lua;
}

/** Names given with {@link defineScripts}, per connection. */
const aliases = new WeakMap<ReceiptsConnection, Map<string, Script>>();

function scriptOn(redis: RedisConnection, name: string): Script {
  const library = packageScripts();
  return library.find(name) ?? aliases.get(receiptsConnection(redis))?.get(name) ?? library.script(name);
}

/** The adapter of `redis`: itself when it is one already (a channel's connection, on every call). */
const adapterOf = (redis: RedisConnection): ReceiptsConnection => (isReceiptsConnection(redis) ? redis : receiptsConnection(redis));

/**
 * Runs the package's script `name` (its file's name without the key count:
 * `claim`, `complete-claim`, `commit-batch`) on `redis`. `keys` then `args`
 * are read as one list: the first KEYS count of values are KEYS, the rest
 * ARGV; a `<name>-N.lua` script takes the key count first. Throws
 * {@link ScriptDefinitionError} for a name no file has.
 */
export function runScript(redis: RedisConnection, name: string, keys: readonly ScriptArg[], args: readonly ScriptArg[]): Promise<unknown> {
  const entry = entryOf(scriptOn(redis, name), keys, args);
  return adapterOf(redis).evalScript(entry.script, entry.keys, entry.args);
}

/** Runs a `<name>-N.lua` script: the key count is put first. */
export function runVariadicScript(
  redis: RedisConnection,
  name: string,
  keys: readonly string[],
  args: readonly ScriptArg[],
): Promise<unknown> {
  return runScript(redis, name, [String(keys.length), ...keys], args);
}

/** A script's run as an entry of a {@link ReceiptsConnection.batch}; arguments as {@link runScript}. */
export function scriptEntry(redis: RedisConnection, name: string, keys: readonly ScriptArg[], args: readonly ScriptArg[]): BatchEntry {
  return entryOf(scriptOn(redis, name), keys, args);
}

/** A name for one of the package's scripts (see {@link defineScripts}). */
export interface ScriptDefinition {
  /** The name to run it by. */
  readonly name: string;
  /** Its file inside the package's `lua/` directory, e.g. `claim-4.lua`. */
  readonly file: string;
  /** Number of KEYS; must agree with the file's name (`'any'` for `<name>-N.lua`). */
  readonly numberOfKeys: number | 'any';
}

/**
 * Gives scripts of the package's `lua/` directory another name on one
 * connection. Calling it again with the same definition is a no-op.
 *
 * @deprecated Not needed: every script runs by its file's name without the
 * key count (`claim` for `claim-4.lua`), on any connection. Kept so code
 * that calls it keeps working.
 *
 * Throws {@link ScriptDefinitionError} for a file the package does not have,
 * a key count that disagrees with the file name, a name already given to
 * another file on that connection, or the name of another of the package's
 * scripts.
 */
export function defineScripts(redis: RedisConnection, scripts: readonly ScriptDefinition[]): void {
  const library = packageScripts();
  const connection = receiptsConnection(redis);
  let names = aliases.get(connection);
  if (!names) aliases.set(connection, (names = new Map()));
  for (const definition of scripts) {
    const script = library.byFile(definition.file);
    const takes = script.keys.kind === 'fixed' ? script.keys.count : 'any';
    if (definition.numberOfKeys !== takes) {
      throw new ScriptDefinitionError(
        `script ${definition.name}: lua/${definition.file} takes ${takes} keys, not ${definition.numberOfKeys}`,
        definition.file,
      );
    }
    const previous = library.find(definition.name) ?? names.get(definition.name);
    if (previous !== undefined && previous !== script) {
      throw new ScriptDefinitionError(
        `command ${definition.name} is already defined from ${previous.file}, not ${definition.file}`,
        definition.file,
      );
    }
    names.set(definition.name, script);
  }
}
