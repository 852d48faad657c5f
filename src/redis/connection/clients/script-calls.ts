/**
 * How an adapter sends a script: by FCALL where the server has its library
 * loaded, else by EVALSHA, and by its text (EVAL) the first time a server is
 * sent it and again after NOSCRIPT. Every script call of every adapter comes
 * here, alone or in a batch (`functionToCall`).
 */
import type { LuaScript, RedisArg, ScriptFunction } from './types.js';

/** The SHAs of the scripts each server has been sent, by the server's name (`''` when the connection has one). */
export type LoadedScripts = Map<string, Set<string>>;

/**
 * How an adapter sends a script's command: `args` is the SHA (the text, or
 * the function's name), the key count, the keys, the arguments; for
 * FUNCTION, `LOAD` and a library's text.
 */
export type ScriptSend = (command: ScriptCommand, args: readonly RedisArg[]) => Promise<unknown>;

/** The commands a script goes out as. */
export type ScriptCommand = 'EVAL' | 'EVALSHA' | 'FCALL' | 'FUNCTION';

/** Which script libraries each server has loaded as Redis Functions, as {@link evalWithFallback} asks (`./functions.ts`). */
export interface ServerFunctions {
  /**
   * The functions each server has loaded, by server name: FCALL of one may
   * go there. A map read in place, as every script call reads it.
   */
  readonly loaded: ReadonlyMap<string, ReadonlySet<string>>;
  /**
   * Counts an EVAL run of `fn` on `server`, and after a few starts loading
   * its library there in the background, unless it is loading or was
   * refused; never fails.
   */
  load(send: ScriptSend, server: string, fn: ScriptFunction): void;
  /**
   * Whether an FCALL of `fn` failed with a refusal the server gives before
   * a function runs (not loaded, the command unknown or not allowed, out of
   * memory, a read-only replica): the caller then runs the script by EVAL.
   */
  refusedUnrun(server: string, fn: ScriptFunction, error: unknown): boolean;
}

/**
 * Runs a script through `send`: by FCALL where `functions` knows the
 * server has its library (loading it in the background once the script has
 * run a few times, see `./functions.ts`; `reach` sends the load to `server` where `send` routes
 * by the command's keys, on a Cluster), else by its text (EVAL) the first
 * time it goes to `server` (which also caches it there), by SHA (EVALSHA)
 * after that, and by its text again when the server answers NOSCRIPT (after
 * a restart, a failover or SCRIPT FLUSH). Sending the text first, as ioredis
 * does, means a first call whose reply is lost (a timeout) still ran, as any
 * later one would, rather than being refused unseen. `loaded` remembers, per adapter,
 * which scripts each server has been sent. The command's arguments are built
 * once, in one array (`send` copies what it keeps, as every adapter's client
 * does): every receipt transition goes through here.
 */
export function evalWithFallback(
  send: ScriptSend,
  script: LuaScript,
  keys: readonly string[],
  args: readonly RedisArg[],
  loaded: LoadedScripts,
  server = '',
  functions?: ServerFunctions,
  reach: ScriptSend = send,
): Promise<unknown> {
  const wire = new Array<RedisArg>(2 + keys.length + args.length);
  wire[1] = keys.length;
  for (let i = 0; i < keys.length; i++) wire[2 + i] = keys[i]!;
  for (let i = 0; i < args.length; i++) wire[2 + keys.length + i] = args[i]!;
  const fn = functionToCall(script, server, functions, reach);
  if (fn === undefined) return evalBySha(send, script, wire, loaded, server);
  wire[0] = fn.name;
  // A handler on the reply, not an async frame: once its library is loaded, every script call goes here.
  return sentNow(send, 'FCALL', wire).catch((error: unknown) => {
    // Refused before it ran (not loaded there, or refused as a whole): EVAL runs it, as it did before.
    if (!functions!.refusedUnrun(server, fn, error)) throw error;
    return evalBySha(send, script, wire, loaded, server);
  });
}

/** `send`'s reply, a rejection when `send` throws instead of answering. */
function sentNow(send: ScriptSend, command: ScriptCommand, wire: RedisArg[]): Promise<unknown> {
  try {
    return send(command, wire);
  } catch (error) {
    return Promise.reject(error);
  }
}

/** {@link evalWithFallback}'s EVALSHA: by text the first time `server` is sent the script, and again after NOSCRIPT. */
async function evalBySha(send: ScriptSend, script: LuaScript, wire: RedisArg[], loaded: LoadedScripts, server: string): Promise<unknown> {
  let sent = loaded.get(server);
  if (sent === undefined) loaded.set(server, (sent = new Set()));
  wire[0] = script.sha;
  if (!sent.has(script.sha)) return evalByText(send, script, wire, sent);
  try {
    return await send('EVALSHA', wire);
  } catch (error) {
    if (!isNoScript(error)) throw error;
    sent.delete(script.sha);
    return evalByText(send, script, wire, sent);
  }
}

/**
 * The function to run `script` by on `server` now: its own, when `functions`
 * knows the server has loaded it; otherwise `undefined` (it goes by EVAL or
 * EVALSHA), and this run is counted towards loading its library (`reach`
 * sends the load there). Every script call decides here, alone or in a batch.
 */
export function functionToCall(
  script: LuaScript,
  server: string,
  functions: ServerFunctions | undefined,
  reach: ScriptSend,
): ScriptFunction | undefined {
  const fn = script.function;
  if (functions === undefined || fn === undefined) return undefined;
  if (functions.loaded.get(server)?.has(fn.name) === true) return fn;
  functions.load(reach, server, fn);
  return undefined;
}

/** {@link evalWithFallback}'s EVAL: `wire` with the script's text in place of its SHA. */
async function evalByText(send: ScriptSend, script: LuaScript, wire: RedisArg[], sent: Set<string>): Promise<unknown> {
  sent.add(script.sha);
  wire[0] = script.source;
  try {
    return await send('EVAL', wire);
  } catch (error) {
    sent.delete(script.sha); // not known to have reached the server: send the text again next time
    throw error;
  }
}

/** Whether `error` is the server's NOSCRIPT reply (the script is not cached there). */
export function isNoScript(error: unknown): boolean {
  return error instanceof Error && error.message.startsWith('NOSCRIPT');
}
