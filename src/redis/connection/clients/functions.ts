/**
 * The script libraries each server has loaded as Redis Functions, for one
 * adapter (each master of a Cluster by its name). A script runs by FCALL
 * only once its library is known to be on the server; until then, and
 * whenever FCALL is refused before it ran, it runs by EVAL as it always
 * did, so nothing depends on a library being there. The
 * {@link LOAD_AFTER_RUNS}th EVAL of a script through the adapter starts its
 * FUNCTION LOAD in the background, never awaited by a call: a worker loads
 * the scripts it runs, and a command-line call or a short test that runs a
 * script a few times leaves the server no library. A server that refuses a
 * library for good (an older Redis without FUNCTION, an ACL without it, a
 * library it cannot compile) keeps that script on EVAL for the life of the
 * adapter; a failure that may pass (a dropped connection, a timeout, a
 * server out of memory or loading) lets a later call try again.
 */
import { isReplyError } from './commands.js';
import type { ScriptSend, ServerFunctions } from './script-calls.js';
import type { ScriptFunction } from './types.js';

/** Error replies of a server that may answer otherwise later: a load refused with one of them is tried again. */
const PASSING = /^(?:OOM|READONLY|LOADING|BUSY|MASTERDOWN|TRYAGAIN|CLUSTERDOWN|NOREPLICAS)\b/;
/**
 * FCALL's refusals that leave the function unrun: not loaded there, the
 * command unknown or denied, or a write refused up front (a function is
 * checked before it runs, where EVAL is checked at its first write, so EVAL
 * may still run a call that writes nothing). Any other error is the call's.
 */
const NOT_LOADED = /^ERR (?:Function not found|unknown command [`']fcall[`'])/i;
const DENIED = /^NOPERM\b.*'fcall' command/i;
const REFUSED_WHOLE = /^(?:OOM|READONLY)\b/;

const messageOf = (error: unknown): string => (error instanceof Error ? error.message : '');

/** How many times a script runs by EVAL through one adapter before its library is loaded on that server. */
export const LOAD_AFTER_RUNS = 8;

/** The functions one adapter's servers have loaded (keyed by server name, `''` for the one server of a single node). */
export class LoadedFunctions implements ServerFunctions {
  readonly loaded = new Map<string, Set<string>>();
  private readonly refused = new Map<string, Set<string>>();
  private readonly loading = new Set<string>();
  /** EVAL runs of each script not loaded yet, by server and function. */
  private readonly runs = new Map<string, number>();

  load(send: ScriptSend, server: string, fn: ScriptFunction): void {
    const id = `${server}\n${fn.name}`;
    if (this.loading.has(id) || this.refused.get(server)?.has(fn.name)) return;
    const runs = (this.runs.get(id) ?? 0) + 1;
    if (runs < LOAD_AFTER_RUNS) {
      this.runs.set(id, runs);
      return;
    }
    this.runs.delete(id);
    this.loading.add(id);
    // Started on the next microtask: a send that throws where it should reject cannot fail the call that asked.
    void Promise.resolve()
      .then(() => send('FUNCTION', ['LOAD', fn.library]))
      .then(
        () => this.mark(this.loaded, server, fn.name),
        (error: unknown) => {
          const message = messageOf(error);
          // Loaded already (by another process of this release): as good as loaded now.
          if (/already exists/i.test(message)) this.mark(this.loaded, server, fn.name);
          else if (isReplyError(error) && !PASSING.test(message)) this.mark(this.refused, server, fn.name);
        },
      )
      .finally(() => this.loading.delete(id));
  }

  refusedUnrun(server: string, fn: ScriptFunction, error: unknown): boolean {
    const message = messageOf(error);
    if (NOT_LOADED.test(message)) {
      // Flushed, restarted without it, or a new master: load it again, and run this call by EVAL.
      this.loaded.get(server)?.delete(fn.name);
      return true;
    }
    if (DENIED.test(message)) {
      this.loaded.get(server)?.delete(fn.name);
      this.mark(this.refused, server, fn.name);
      return true;
    }
    return REFUSED_WHOLE.test(message);
  }

  private mark(into: Map<string, Set<string>>, server: string, name: string): void {
    let names = into.get(server);
    if (names === undefined) into.set(server, (names = new Set()));
    names.add(name);
  }
}
