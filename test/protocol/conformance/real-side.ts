/**
 * The real side of the conformance walk: the scripts of a lua/ directory on
 * a real redis-server, and the outcome table with its lifetime locks on a
 * real PostgreSQL, under the names of one scenario's run. It keeps the real
 * tokens the model's small ids stand for, each worker's PostgreSQL session,
 * and the clock: the model's ticks laid on the Redis server's time, so a
 * deadline the model says has passed has passed on the server, and one it
 * says is live is live (see `ticksLeft`).
 */
import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import pg from 'pg';
import { breakerField, callRedisKeys } from '../../../src/redis/keys.js';
import { newEpoch } from '../../../src/redis/receipts/transitions/epochs.js';
import type { ScriptLibrary } from '../../../src/redis/scripts/scripts.js';
import { limitBindingField, limitBindingsRedisKey, limitRedisKeys } from '../../../src/limits/keys.js';
import { approvalScriptKeys } from '../../../src/approvals/keys.js';
import { outcomeTable } from '../../../src/transactional/table.js';
import { LIFETIME_LOCK_SPACE, lifetimeLockKey } from '../../../src/transactional/takeover.js';
import type { Scenario } from '../../../protocol/model/state.js';

/**
 * Milliseconds of one model tick on the server's clock, by default. A
 * deadline of n ticks is given to a script as n - 1/2 ticks
 * ({@link RealSide.deadlineMs}): set in the first half of tick k, it passes
 * in the second half of tick k + n - 1, so a step made in the first half of
 * a tick (the walk sees to it) finds it passed exactly when the model does.
 */
export const TICK_MS = 400;
/** A tick for a walk along a fixed path, which cannot let the clock tick early when a slow step puts it behind. */
export const PATH_TICK_MS = 2_000;
export const RETENTION_MS = 600_000;
export const LIMIT_NAME = 'calls';

/** What a statement on a worker's session came to: rows, or the database's error. */
export type Outcome =
  { readonly ok: true; readonly rows: pg.QueryResultRow[] } | { readonly ok: false; readonly code: string; readonly message: string };

/** One worker's PostgreSQL session (a fresh connection per transaction, as a pool hands out). */
export interface Session {
  readonly client: pg.Client;
  readonly pid: number;
  /** A statement still waiting on a lock (a blocked insert, a takeover's exclusive lock). */
  pending?: Promise<Outcome>;
}

export class RealSide {
  readonly tenant: string;
  readonly run: string;
  readonly tool = 'send';
  readonly table = outcomeTable().qualified;
  /** Per call: the model's ids (epochs, tokens) to the real tokens, and back. */
  private readonly ids: Map<number, string>[];
  private readonly idsBack: Map<string, number>[];
  /** The model's reservation ids to the real ones, and back. */
  private readonly reservations = new Map<number, string>();
  private readonly reservationsBack = new Map<string, number>();
  readonly sessions: (Session | undefined)[];
  /** Per worker: the server's time its last reconcile-begin that began answered (the verdict carries it). */
  readonly begunMs: (number | undefined)[] = [];
  /** The server's time (ms) at tick 0, and the ticks passed since. */
  base = 0;
  tick = 0;
  /** The limit's window: long enough never to reset during a walk (see `startClock`). */
  windowMs = 0;

  constructor(
    readonly redis: Redis,
    readonly scripts: ScriptLibrary,
    readonly prefix: string,
    readonly postgresUrl: string | undefined,
    readonly observer: pg.Client | undefined,
    readonly scenario: Scenario,
    /** Milliseconds of one tick: longer for a walk along a fixed path, which must not be made to tick early. */
    readonly tickMs = TICK_MS,
  ) {
    const id = randomBytes(6).toString('hex');
    this.tenant = `tenant-${id}`;
    this.run = `run-${id}`;
    this.ids = scenario.calls.map(() => new Map());
    this.idsBack = scenario.calls.map(() => new Map());
    this.sessions = Array.from({ length: scenario.workers }, () => undefined);
  }

  callKey(call: number) {
    return { tenantId: this.tenant, runId: this.run, toolName: this.tool, argsHash: `args${call}` };
  }
  callKeys(call: number): [string, string, string, string] {
    return callRedisKeys(this.prefix, this.callKey(call));
  }
  receiptKey(call: number): string {
    return this.callKeys(call)[0];
  }
  /** The call whose receipt key this is; -1 for none of the scenario's. */
  callOf(receiptKey: string): number {
    return this.scenario.calls.findIndex((_, call) => this.receiptKey(call) === receiptKey);
  }
  /** The three keys of a transition: receipt, run index, counting set. */
  transitionKeys(call: number): [string, string, string] {
    const [receipt, index, , count] = this.callKeys(call);
    return [receipt, index, count];
  }
  approvalKeys(call: number): [string, string, string] {
    return approvalScriptKeys(this.prefix, this.receiptKey(call));
  }
  limitKeys(): [string, string, string] {
    const keys = limitRedisKeys(this.prefix, { name: LIMIT_NAME, per: 'run' }, { tenantId: this.tenant, runId: this.run });
    return [keys.state, keys.due, keys.done];
  }
  bindingsKey(): string {
    return limitBindingsRedisKey(this.prefix, this.tenant, this.run);
  }
  readonly bindingField = limitBindingField(LIMIT_NAME);
  readonly removedField = breakerField(this.tool, 'removed');
  readonly rejectionsField = breakerField(this.tool, 'rejections');
  lockKey(call: number, epoch: number): [number, number] {
    return [LIFETIME_LOCK_SPACE, lifetimeLockKey(this.receiptKey(call), this.real(call, epoch))];
  }

  /** The real token of model id `id` of `call`, minted the first time it is asked for. */
  real(call: number, id: number): string {
    if (id === 0) return '';
    let token = this.ids[call]!.get(id);
    if (token === undefined) {
      token = newEpoch(this.receiptKey(call));
      this.ids[call]!.set(id, token);
      this.idsBack[call]!.set(token, id);
    }
    return token;
  }
  /** The model id of a real token of `call`; undefined for one no model id stands for. */
  modelId(call: number, token: string): number | undefined {
    return token === '' ? 0 : this.idsBack[call]!.get(token);
  }
  /** The real id of reservation `id`; `minted` (the id the reserve granted) when it is seen for the first time. */
  realReservation(id: number, minted?: string): string {
    let real = this.reservations.get(id);
    if (real === undefined) {
      if (minted === undefined) throw new Error(`reservation ${id} of the model has no real id`);
      real = minted;
      this.reservations.set(id, real);
      this.reservationsBack.set(real, id);
    }
    return real;
  }
  modelReservation(real: string): number | undefined {
    return this.reservationsBack.get(real);
  }

  /** A deadline of `ticks` ticks, as milliseconds to give a script. */
  deadlineMs(ticks: number): number {
    return ticks * this.tickMs - this.tickMs / 2;
  }

  /** Past this far into a tick, a step could reach the tick's second half: the walk lets the clock tick first. */
  get tickBudgetMs(): number {
    return this.tickMs / 2 - Math.max(60, this.tickMs / 4);
  }

  /** The result text a model result id stands for. */
  static resultText(result: number): string {
    return JSON.stringify(`r${result}`);
  }
  static resultOf(text: string | undefined | null): number {
    const match = /^"r(\d+)"$/.exec(text ?? '');
    return match === null ? -1 : Number(match[1]);
  }

  async now(): Promise<number> {
    const [s, us] = await this.redis.time();
    return Number(s) * 1000 + Math.floor(Number(us) / 1000);
  }

  /** Tick 0 starts at the next whole tick of the server's clock; the limit's window started 10 s before it. */
  async startClock(): Promise<void> {
    const now = await this.now();
    this.base = now + (this.tickMs - (now % this.tickMs));
    // Windows start at multiples of their length: one just shorter than now started 10 s ago and lasts decades.
    this.windowMs = this.base - 10_000;
    await this.untilTick(0);
  }

  /** Sleeps until the server's clock reaches tick `tick`. */
  async untilTick(tick: number): Promise<void> {
    for (;;) {
      const left = this.base + tick * this.tickMs - (await this.now());
      if (left <= 0) break;
      await new Promise((resolve) => setTimeout(resolve, left + 1));
    }
    this.tick = tick;
  }

  /** How far into the current tick the server's clock is. */
  async intoTick(): Promise<number> {
    return (await this.now()) - (this.base + this.tick * this.tickMs);
  }

  /**
   * The ticks left until a deadline stored as ms on the server's clock (0:
   * passed), as the model counts them: one in a tick's second half (set as
   * {@link RealSide.deadlineMs} says) passes from the next tick on; one in its first
   * half (a lease ended "now") has passed for every step after the one that set it.
   */
  ticksLeft(deadline: number): number {
    const since = deadline - this.base;
    const tick = Math.floor(since / this.tickMs);
    const passesIn = since - tick * this.tickMs >= this.tickMs / 2 ? tick + 1 : tick;
    return Math.max(0, passesIn - this.tick);
  }

  /** Runs a script of the library; a script's error reply (a corrupt receipt) comes back as `{ error }`. */
  async script(name: string, keys: readonly string[], args: readonly (string | number)[]): Promise<unknown[] | { error: string }> {
    try {
      const reply = await this.scripts.run(this.redis, name, keys, args);
      return Array.isArray(reply) ? reply : [reply];
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      if (message.includes('TRC_CORRUPT') || message.includes('TRC_VERSION')) return { error: message };
      throw error;
    } finally {
      // Done past the tick's first half, the script may have read a later tick's time than the model's.
      if ((await this.intoTick()) >= this.tickMs / 2) this.late = true;
    }
  }

  /**
   * A script of the walk finished past the first half of its tick (the
   * machine stalled the walk): what it saw of a deadline may be a tick
   * later than the model's, so the walk cannot be compared from there on.
   */
  late = false;

  /** Opens worker `wi`'s session for a new transaction. */
  async open(wi: number): Promise<Session> {
    if (this.postgresUrl === undefined) throw new Error('this walk has no PostgreSQL');
    await this.close(wi);
    const client = new pg.Client({ connectionString: this.postgresUrl });
    // A session the walk ends on purpose (a takeover's sweep, a kill) errors on its socket: expected.
    client.on('error', () => undefined);
    await client.connect();
    const pid = Number((await client.query('SELECT pg_backend_pid() AS pid')).rows[0].pid);
    const session: Session = { client, pid };
    this.sessions[wi] = session;
    return session;
  }

  /** Runs a statement on worker `wi`'s session, never throwing: the outcome says how it went. */
  static async statement(session: Session, text: string, values: readonly unknown[] = []): Promise<Outcome> {
    try {
      return { ok: true, rows: (await session.client.query(text, values as unknown[])).rows };
    } catch (error) {
      const e = error as { code?: string; message?: string };
      return { ok: false, code: e.code ?? 'connection', message: e.message ?? String(error) };
    }
  }

  /** Ends worker `wi`'s session as a killed process does (the server rolls its transaction back). */
  async close(wi: number): Promise<void> {
    const session = this.sessions[wi];
    this.sessions[wi] = undefined;
    if (session === undefined) return;
    await session.client.end().catch(() => undefined);
    await session.pending?.catch(() => undefined);
  }

  async closeAll(): Promise<void> {
    await Promise.all(this.sessions.map((_, wi) => this.close(wi)));
  }
}
