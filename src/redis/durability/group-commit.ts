/**
 * Group commit: the claims and completes (a complete that claims the next
 * call of its turn included), and the limit writes beside them, that
 * different jobs of one worker send in the same tick go to Redis as one
 * script call (`commit-batch-N.lua`), which runs each exactly as its own
 * script would, in order. The fixed cost of a
 * script call and of a socket write is then paid once per batch instead of
 * once per call.
 *
 * It costs nothing when it cannot pay: a call sent while none of this
 * store's claims or completes is waiting for Redis goes out at once, alone,
 * as it always did (so one job at a time never waits a tick). Only calls that
 * arrive while others are in flight wait, until the end of the tick, and a
 * batch that ends up holding one call sends that call's own script.
 *
 * On a Cluster a batch holds only calls whose keys hash to one slot (so one
 * node runs it, and never a cross-slot call); on a single node, any calls.
 * A server behind one endpoint that still refuses keys of several slots in
 * one script (a cluster proxy) answers CROSSSLOT before running anything:
 * that batch's calls are then sent alone, and so is every later call.
 */
import clusterKeySlot from 'cluster-key-slot';
import { UnexpectedScriptReplyError } from '../errors.js';
import { packageScripts } from '../scripts/scripts.js';

/**
 * The most calls one batch carries; more in one tick go as several batches,
 * written together. Small batches keep Node and Redis working side by side:
 * with 64 a batch, 50 jobs in flight moved in lockstep (Redis idle while
 * Node read a batch's replies, and the reverse), and a call took 1.38× as
 * long as with no batching; with 8, 0.90× (paired A/B, docs/performance.md).
 */
export const MAX_BATCH_CALLS = 8;

/**
 * The scripts a batch may carry: each is a kind of entry of
 * `commit-batch-N.lua`, named as the script. The limit writes of a limited
 * call (its reserve, bind and commit, a cap's slot taken and freed) are
 * among them: at concurrency they are as many as the claims, and alone
 * each paid a script call and a socket write.
 */
const BATCHED = [
  'claim',
  'complete',
  'complete-claim',
  'limit-reserve',
  'limit-bind',
  'limit-commit',
  'limit-slot-acquire',
  'limit-slot-release',
] as const;
type Kind = (typeof BATCHED)[number];

/** How many KEYS an entry of each kind takes: those of its own script, as its file name says. */
function keysOfKinds(): ReadonlyMap<string, number> {
  return new Map(
    BATCHED.map((kind) => {
      const keys = packageScripts().script(kind).keys;
      return [kind, keys.kind === 'fixed' ? keys.count : -1];
    }),
  );
}

type Args = readonly (string | number)[];
/** Runs a defined script (keys first, then arguments), as the store does for a call alone. */
export type ScriptRunner = (script: string, keys: readonly string[], args: Args) => Promise<unknown>;

interface Queued {
  readonly script: string;
  readonly kind: Kind;
  readonly keys: readonly string[];
  readonly args: Args;
  resolve(reply: unknown): void;
  reject(error: unknown): void;
}

/** Batches one store's claims and completes per tick (see the module's description). */
export class GroupCommit {
  private readonly queued = new Map<number, Queued[]>();
  /** The KEYS count of each script a batch may carry; any other script is sent alone. */
  private readonly keysOf = keysOfKinds();
  private inFlight = 0;
  private flushScheduled = false;
  /** Set when the server refused a batch across slots: every call then goes alone. */
  private off = false;

  /** `run` sends one script; `clustered` groups by slot. */
  constructor(
    private readonly run: ScriptRunner,
    private readonly clustered: boolean,
  ) {}

  /** Batches sent (two calls or more each), and the calls they carried: for the bench and the tests. */
  readonly sent = { batches: 0, calls: 0 };

  /**
   * Sends a call of a batched kind (see `BATCHED`), alone when
   * nothing else is in flight, else with the calls of the same tick; any
   * other script goes out at once, as the store would send it.
   * `behind`: the call must reach Redis after the one submitted just
   * before it (a bind conditioned on the claim before it): it joins the
   * tick's batch when one is waiting (the call before it is in it, ahead),
   * and otherwise goes out at once, right behind that call, which went
   * alone (with a batch waiting it would wait for the tick's end, and the
   * call before it may be answered first).
   * Resolves or rejects exactly as the call alone would: with its script's
   * reply, its own error reply (a corrupt receipt fails its call only), or
   * the batch's transport error.
   */
  submit(script: string, keys: readonly string[], args: Args, behind = false): Promise<unknown> {
    if (keys.length !== this.keysOf.get(script) || this.off) return this.run(script, keys, args);
    const kind = script as Kind;
    if ((this.inFlight === 0 || behind) && !this.flushScheduled) return this.tracked(this.run(script, keys, args));
    return new Promise((resolve, reject) => {
      const group = this.clustered ? clusterKeySlot(keys[0]!) : 0;
      const entries = this.queued.get(group);
      const entry: Queued = { script, kind, keys, args, resolve, reject };
      if (entries) entries.push(entry);
      else this.queued.set(group, [entry]);
      if (!this.flushScheduled) {
        this.flushScheduled = true;
        // After this turn of the event loop: every reply read with it has had its continuation run.
        setImmediate(() => this.flush());
      }
    });
  }

  /** Counts `reply` in flight until it settles; returns it as it is (no async function per call: every claim and complete comes here). */
  private tracked<T>(reply: Promise<T>): Promise<T> {
    this.inFlight++;
    reply.then(this.landed, this.landed);
    return reply;
  }

  private readonly landed = (): void => {
    this.inFlight--;
  };

  private flush(): void {
    this.flushScheduled = false;
    const groups = [...this.queued.values()];
    this.queued.clear();
    for (const entries of groups) {
      for (let at = 0; at < entries.length; at += MAX_BATCH_CALLS) this.send(entries.slice(at, at + MAX_BATCH_CALLS));
    }
  }

  private send(entries: readonly Queued[]): void {
    if (entries.length === 1) return this.sendAlone(entries[0]!);
    // A <name>-N script takes its key count first. Plain loops: a batch is built for most calls under load.
    const keys: string[] = [''];
    const args: (string | number)[] = [entries.length];
    for (const entry of entries) {
      for (const key of entry.keys) keys.push(key);
      args.push(entry.kind, entry.args.length);
      for (const arg of entry.args) args.push(arg);
    }
    keys[0] = String(keys.length - 1);
    this.sent.batches++;
    this.sent.calls += entries.length;
    this.tracked(this.run('commit-batch', keys, args)).then(
      (replies) => {
        if (!Array.isArray(replies) || replies.length !== entries.length) {
          const error = new UnexpectedScriptReplyError('commit-batch', replies);
          for (const entry of entries) entry.reject(error);
          return;
        }
        entries.forEach((entry, i) => {
          const reply: unknown = replies[i];
          if (Array.isArray(reply) && reply[0] === -1) entry.reject(new Error(String(reply[1])));
          else entry.resolve(reply);
        });
      },
      (error: unknown) => {
        if (!refusedAcrossSlots(error)) {
          for (const entry of entries) entry.reject(error);
          return;
        }
        // Refused before it ran, so nothing was written: from now on every call goes alone.
        this.off = true;
        for (const entry of entries) this.sendAlone(entry);
      },
    );
  }

  private sendAlone(entry: Queued): void {
    this.tracked(this.run(entry.script, entry.keys, entry.args)).then(entry.resolve, entry.reject);
  }
}

/**
 * A server that presents one endpoint yet refuses a script whose keys hash
 * to several slots (a cluster proxy, a cluster node reached as one server)
 * answers CROSSSLOT before running anything.
 */
const refusedAcrossSlots = (error: unknown): boolean => error instanceof Error && /^CROSSSLOT\b/.test(error.message);
