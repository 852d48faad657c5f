/**
 * The one channel a receipts keyspace talks to Redis through, shared by all
 * its parts: the checked connection, the frozen settings, group commit, one
 * durability waiter, one mapping of what Redis threw into typed errors, the
 * fenced write, the observation every receipt script answers, and values
 * (results, steps) as the receipt stores them.
 * Over 300 lines: it is the one wire of every receipt transition, what goes
 * out and what comes back, kept together so no part speaks it differently.
 */
import type { EffectResumability, ReceiptState } from '../../core/decision.js';
import { assertWellFormedNames, type ToolCallReceiptKey } from '../../core/identity.js';
import { checkOptions, type OptionsSchema } from '../../core/options.js';
import { checkedConnection, type ReceiptsConnection, type RedisConnection } from '../connection/connection.js';
import { stepOfScript, unreachableErrorOf } from '../connection/unreachable.js';
import { DurabilityWaiter, type DurableWrite } from '../durability/durability.js';
import { GroupCommit } from '../durability/group-commit.js';
import {
  corruptReceiptErrorOf,
  FencedOutError,
  InvalidReceiptInputError,
  ReceiptValueNotSerializableError,
  UnexpectedScriptReplyError,
  type AttemptFence,
  type ObservedFence,
  type ReceiptStatus,
} from '../errors.js';
import { callRedisKeys, type CallKeys } from '../keys.js';
import { packageScripts, runScript, type Script } from '../scripts/scripts.js';
import { keyspaceSettings, positiveInt, type KeyspaceSettings, type KeyspaceSettingsInput } from '../settings.js';

/** Where a failed command was: its key and the step (default: the key a script was sent for, and the script's step). */
export interface CommandSite {
  readonly redisKey?: string;
  readonly step?: string;
  /**
   * Sent right behind the script call made just before it in the same tick
   * (in its batch when that one waits for the tick's end, else at once):
   * see `GroupCommit.submit`.
   */
  readonly behind?: boolean;
}

/** The site of a script sent with none given: its first key, and the script's step. */
const NO_SITE: CommandSite = {};

/**
 * A connection to the receipts keyspace, made once per keyspace: the
 * call, reconcile, breaker and read parts each hold the same one, so they
 * share its deadline, its group commit batches and its durability waits.
 */
export class ReceiptsChannel {
  readonly redis: ReceiptsConnection;
  readonly settings: KeyspaceSettings;
  /**
   * Waits for the acknowledgements `settings.durability` asks for; undefined when off.
   * @internal
   */
  readonly durability: DurabilityWaiter | undefined;
  /** Whether the connection is a Redis Cluster. */
  readonly clustered: boolean;
  /**
   * The keys of each call, by its key object while it lives: a call's
   * complete names the object its claim did, so they are built once.
   */
  private readonly keysByCall = new WeakMap<ToolCallReceiptKey, ToolCallReceiptKey & { readonly keys: Readonly<CallKeys> }>();
  /** Batches claims and completes per tick; undefined with `groupCommit: false`. */
  private readonly group: GroupCommit | undefined;
  /**
   * The package's scripts this channel has run, by name (`null`: no such
   * package script, so `runScript` finds it): looked up once, so a
   * transition goes straight to the adapter with the keys it was given.
   */
  private readonly scripts = new Map<string, Script | null>();

  /** `redis` and `settings` come from checked options; `site` names the entry point in a refused connection's error. */
  constructor(redis: RedisConnection, settings: KeyspaceSettings, site: string) {
    this.redis = checkedConnection(redis, site, settings.commandTimeoutMs);
    this.settings = settings;
    this.clustered = this.redis.isCluster;
    this.durability = settings.durability ? new DurabilityWaiter(this.redis, settings.durability) : undefined;
    this.group = settings.groupCommit ? new GroupCommit((script, keys, args) => this.run(script, keys, args), this.clustered) : undefined;
  }

  /**
   * The channel a part of the keyspace is made with: the keyspace's own when
   * given one, else a channel of its own from `options`, checked here once
   * against `schema` (throws `options.invalid`, or `redis.invalid_connection`).
   * @internal
   */
  static of<T extends KeyspaceSettingsInput & { readonly redis: RedisConnection }>(
    given: T | ReceiptsChannel,
    site: string,
    schema: OptionsSchema<T>,
  ): ReceiptsChannel {
    if (given instanceof ReceiptsChannel) return given;
    return new ReceiptsChannel(given.redis, keyspaceSettings(checkOptions(site, given, schema)), site);
  }

  /** Group commit's batches so far (two calls or more each) and the calls they carried; zeros when it is off. */
  get groupCommitted(): { readonly batches: number; readonly calls: number } {
    return { ...(this.group?.sent ?? { batches: 0, calls: 0 }) };
  }

  /**
   * Runs a script (batched with others of the tick when group commit takes
   * it). What Redis threw becomes one typed error for every part: a corrupt
   * or newer receipt `CorruptReceiptError` / `ReceiptVersionError`, a
   * timeout or lost connection `RedisTimeoutError` / `RedisConnectionLostError`.
   */
  call(script: string, keys: readonly string[], args: readonly (string | number)[], site: CommandSite = NO_SITE): Promise<unknown> {
    // Not an async function: every claim and complete comes here, and a handler on the reply costs less than a frame.
    const failed = (error: unknown): Promise<never> =>
      Promise.reject(this.typed(error, { redisKey: site.redisKey ?? keys[0] ?? '', step: site.step ?? stepOfScript(script) }));
    let reply: Promise<unknown>;
    try {
      reply = this.group !== undefined ? this.group.submit(script, keys, args, site.behind === true) : this.run(script, keys, args);
    } catch (error) {
      return failed(error);
    }
    return reply.catch(failed);
  }

  /**
   * Sends one script: a package script of a fixed key count given exactly
   * its KEYS (every claim and complete) goes to the adapter as it is;
   * anything else (a `<name>-N.lua` script, a batch) through `runScript`,
   * which reads the list by the loader's one rule (and refuses what does
   * not fit with `ScriptDefinitionError`).
   */
  private run(name: string, keys: readonly string[], args: readonly (string | number)[]): Promise<unknown> {
    let script = this.scripts.get(name);
    if (script === undefined) this.scripts.set(name, (script = packageScripts().find(name) ?? null));
    if (script !== null && script.keys.kind === 'fixed' && keys.length === script.keys.count) {
      return this.redis.evalScript(script.lua, keys, args);
    }
    return runScript(this.redis, name, keys, args);
  }

  /** {@link call}'s mapping, for a command that is not a script. */
  typed(error: unknown, site: { readonly redisKey: string; readonly step: string }): unknown {
    return unreachableErrorOf(corruptReceiptErrorOf(error, site.redisKey), site);
  }

  /**
   * Runs a write that must outlive a failover ({@link call}), then waits for
   * the acknowledgements `settings.durability` asks for: an approval gate or
   * decision, a limit's reserve, bind, settle or commit, an offloaded
   * result. Throws `ReceiptNotDurableError` (`durability.not_acknowledged`)
   * when they fall short, as a claim does, so nothing a failover could
   * forget is reported as done; and, as a claim does, refuses with
   * `DurabilityUnsupportedError` before writing anything when the server
   * cannot acknowledge as asked (`aof` without WAITAOF).
   */
  async write(
    operation: DurableWrite,
    script: string,
    keys: readonly [string, ...string[]],
    args: readonly (string | number)[],
    site: CommandSite = {},
  ): Promise<unknown> {
    // A server that cannot acknowledge as asked (no WAITAOF) refuses the write before anything is written.
    if (this.durability !== undefined) await this.durability.ready(keys[0]);
    const reply = await this.call(script, keys, args, site);
    if (this.durability !== undefined) await this.durability.require(operation, keys[0], this.durability.mark(keys[0]));
    return reply;
  }

  /**
   * Sends one command that is not a script, `redisKey` the key it names,
   * with {@link call}'s mapping of what Redis threw; with `operation`, a
   * write that waits for durability as {@link write} does. The one way a
   * part outside the receipts' own transitions writes a plain command (an
   * index entry, an audit line).
   */
  async command(name: string, args: readonly (string | number)[], redisKey: string, operation?: DurableWrite): Promise<unknown> {
    if (operation !== undefined && this.durability !== undefined) await this.durability.ready(redisKey);
    let reply: unknown;
    try {
      reply = await this.redis.command(name, args, redisKey);
    } catch (error) {
      throw this.typed(error, { redisKey, step: name.toLowerCase() });
    }
    if (operation !== undefined && this.durability !== undefined) {
      await this.durability.require(operation, redisKey, this.durability.mark(redisKey));
    }
    return reply;
  }

  /**
   * Runs a receipt script ({@link call}) and parses what it saw.
   * @internal
   */
  observe(script: string, keys: readonly string[], args: readonly (string | number)[]): Promise<Observation> {
    return this.call(script, keys, args).then((reply) => parseObservation(script, reply));
  }

  /**
   * The receipt, run index, breaker hash and counting set of a call: the
   * KEYS of claim and complete. A name that is not well-formed Unicode
   * throws `MalformedNameError` before anything is sent.
   * @internal
   */
  callKeys(key: ToolCallReceiptKey): Readonly<CallKeys> {
    const known = this.keysByCall.get(key);
    // Field by field: the caller may have changed the object since.
    if (
      known !== undefined &&
      known.tenantId === key.tenantId &&
      known.runId === key.runId &&
      known.toolName === key.toolName &&
      known.argsHash === key.argsHash
    ) {
      return known.keys;
    }
    assertWellFormedNames({ 'tenant id': key.tenantId, 'run id': key.runId, 'tool name': key.toolName, 'args hash': key.argsHash });
    const keys = callRedisKeys(this.settings.prefix, key);
    this.keysByCall.set(key, { tenantId: key.tenantId, runId: key.runId, toolName: key.toolName, argsHash: key.argsHash, keys });
    return keys;
  }

  /**
   * The receipt, the run index and the run's counting set: the KEYS of every other transition.
   * @internal
   */
  transitionKeys(key: ToolCallReceiptKey): [string, string, string] {
    const [receipt, index, , count] = this.callKeys(key);
    return [receipt, index, count];
  }

  /**
   * Runs a transition fenced on `fence` (its attempt first in ARGV, its
   * epoch last): codes 1 and 2 are its successes, anything else a fence
   * refusal (`FencedOutError`, nothing written). Waits for durability.
   * @internal
   */
  fenced(
    operation: DurableWrite,
    script: string,
    keys: readonly [string, ...string[]],
    fence: AttemptFence,
    args: readonly (string | number)[],
  ): Promise<Observation> {
    try {
      checkFence(fence);
    } catch (error) {
      return Promise.reject(error);
    }
    // A handler on the reply, not an async frame around it: every complete comes here.
    return this.observe(script, keys, [fence.attempt, ...args, fence.epoch]).then((seen) =>
      this.fencedSeen(operation, keys[0], fence, seen),
    );
  }

  /** A fenced transition's observation: a refusal thrown, a success once it is durable (at once without durability). */
  private fencedSeen(
    operation: DurableWrite,
    redisKey: string,
    fence: AttemptFence,
    seen: Observation,
  ): Observation | Promise<Observation> {
    const durability = this.durability;
    const mark = durability?.mark(redisKey);
    if (seen.code !== 1 && seen.code !== 2) throw new FencedOutError(redisKey, fence, toFence(seen), operation);
    if (durability === undefined) return seen;
    return durability.require(operation, redisKey, mark).then(() => seen);
  }
}

/** Checks a fence before it is sent: a whole attempt number >= 1 and an epoch string. */
export function checkFence(fence: AttemptFence): void {
  if (typeof fence !== 'object' || fence === null) {
    throw new InvalidReceiptInputError('a fenced write needs the fence { attempt, epoch } its claim returned');
  }
  positiveInt(fence.attempt, 'attempt');
  if (typeof fence.epoch !== 'string') {
    throw new InvalidReceiptInputError(`the fence's epoch must be the string its claim returned, got ${typeof fence.epoch}`);
  }
}

// What every receipt script answers: the observation (lua/includes/observe-receipt.lua).

/** What a script saw (or left) in a receipt, on the server clock. */
export interface Observation {
  readonly code: number;
  /** `null` when no receipt exists. */
  readonly status: ReceiptStatus | null;
  readonly attempts: number;
  readonly leaseExpired: boolean;
  readonly leaseRemainingMs: number;
  /** Stored effect; `null` when absent or unreadable. */
  readonly effect: EffectResumability | null;
  /** JSON text of the result when completed, `''` when none. */
  readonly resultText: string;
  readonly ambiguousMs: number | null;
  readonly nowMs: number;
  readonly leaseUntilMs: number | null;
  /** The lifetime's epoch; `''` when absent (no receipt, or one written before epochs existed). */
  readonly epoch: string;
}

const STATUSES: readonly string[] = ['running', 'completed', 'failed'];

/** How many fields an observation reply has (see lua/includes/observe-receipt.lua). */
export const OBSERVATION_FIELDS = 11;

function text(value: unknown): string {
  if (typeof value === 'string') return value;
  if (typeof value === 'number') return String(value);
  if (Buffer.isBuffer(value)) return value.toString('utf8');
  return '';
}

function int(value: unknown, script: string, reply: unknown): number {
  const n = typeof value === 'number' ? value : Number(text(value));
  if (!Number.isSafeInteger(n)) throw new UnexpectedScriptReplyError(script, reply);
  return n;
}

/** Parses `{ code, status, attempts, expired, remaining, effect, result, ambiguous_ms, now, lease_until, epoch }`. */
export function parseObservation(script: string, reply: unknown): Observation {
  if (!Array.isArray(reply) || reply.length !== OBSERVATION_FIELDS) throw new UnexpectedScriptReplyError(script, reply);
  return observationFields(script, reply);
}

/** What the claim script returns: the observation, then the tool's breaker state in the run. */
export interface ClaimObservation extends Observation {
  /** The tool's removal reason for the run; `null` when it is not removed. */
  readonly toolRemoval: string | null;
  /** The tool's current streak of consecutive rejections in the run (0 when unset). */
  readonly rejectionStreak: number;
}

/**
 * Parses the claim script's reply: the observation fields, then
 * `removal` (text, `''` when none) and `rejections` (a non-negative integer).
 * Codes are 0 (exists), 1 (created), 2 (tool removed, no receipt) and 3
 * (approval needed, no receipt); codes 1 to 3 only ever come with the state
 * they imply.
 */
export function parseClaimObservation(script: string, reply: unknown): ClaimObservation {
  if (!Array.isArray(reply) || reply.length !== OBSERVATION_FIELDS + 2) throw new UnexpectedScriptReplyError(script, reply);
  const removal = reply[OBSERVATION_FIELDS];
  if (typeof removal !== 'string' && !Buffer.isBuffer(removal)) throw new UnexpectedScriptReplyError(script, reply);
  const rejectionStreak = int(reply[OBSERVATION_FIELDS + 1], script, reply);
  if (rejectionStreak < 0) throw new UnexpectedScriptReplyError(script, reply);
  const removalText = text(removal);
  const observed = observationFields(script, reply, removalText === '' ? null : removalText, rejectionStreak);
  const consistent =
    observed.code === 0
      ? observed.status !== null
      : observed.code === 1
        ? observed.status === 'running' && removalText === '' && observed.epoch !== ''
        : observed.code === 2
          ? observed.status === null && removalText !== ''
          : observed.code === 3 && observed.status === null && removalText === '';
  if (!consistent) throw new UnexpectedScriptReplyError(script, reply);
  return observed;
}

/**
 * The observation fields of a reply whose length the caller has checked.
 * Every observation is built with the claim's two breaker fields (neutral
 * for other scripts), so one object shape serves both: spreading an
 * observation into a claim's cost every claim a few microseconds.
 */
function observationFields(
  script: string,
  reply: readonly unknown[],
  toolRemoval: string | null = null,
  rejectionStreak = 0,
): ClaimObservation {
  const status = text(reply[1]);
  if (status !== '' && !STATUSES.includes(status)) throw new UnexpectedScriptReplyError(script, reply);
  const effect = text(reply[5]);
  const ambiguous = text(reply[7]);
  const leaseUntil = int(reply[9], script, reply);
  return {
    code: int(reply[0], script, reply),
    status: status === '' ? null : (status as ReceiptStatus),
    attempts: int(reply[2], script, reply),
    leaseExpired: int(reply[3], script, reply) === 1,
    leaseRemainingMs: int(reply[4], script, reply),
    effect: effect === 'resumable' || effect === 'opaque' ? effect : null,
    resultText: text(reply[6]),
    ambiguousMs: ambiguous === '' ? null : int(ambiguous, script, reply),
    nowMs: int(reply[8], script, reply),
    leaseUntilMs: leaseUntil > 0 ? leaseUntil : null,
    epoch: text(reply[10]),
    toolRemoval,
    rejectionStreak,
  };
}

/** The core's view of an observation. */
export function toReceiptState(observation: Observation): ReceiptState {
  switch (observation.status) {
    case null:
      return { kind: 'absent' };
    case 'completed':
      return { kind: 'completed' };
    case 'failed':
      return { kind: 'failed', attempts: observation.attempts };
    case 'running':
      return {
        kind: 'running',
        attempts: observation.attempts,
        leaseExpired: observation.leaseExpired,
        reportedAmbiguous: observation.ambiguousMs !== null,
      };
  }
}

/** Status, attempts and epoch, for a fence error; `null` when absent. */
export function toFence(observation: Observation): ObservedFence | null {
  return observation.status === null ? null : { status: observation.status, attempts: observation.attempts, epoch: observation.epoch };
}

// Values kept in a receipt (results and step values) as JSON text.
// `JSON.stringify` quietly turns a `Map` into `{}`, `NaN` into `null` and drops
// functions; a replayed result or a resumed step built from that text would be
// a different value from the one the tool produced. This refuses those values
// instead, before anything is written.

/** `undefined` at the top level: no value. Stored as an absent field, read back as `undefined`. */
export const NO_VALUE = '';

/**
 * JSON text of `value`, or {@link NO_VALUE} for `undefined`. `toJSON` is
 * honoured (a `Date` becomes its ISO string). `undefined` inside an object is
 * dropped and inside an array becomes `null`, exactly as in `JSON.stringify`.
 * Throws {@link ReceiptValueNotSerializableError} for functions, symbols,
 * `BigInt`, `Map`, `Set`, weak collections, non-finite numbers and cycles.
 */
export function toStoredJson(value: unknown, what: string): string {
  if (value === undefined) return NO_VALUE;
  // The wrapper's results ({ content, is_error? }) and most step values take this path:
  // nothing in them JSON could alter, so no replacer needs to visit every key.
  if (isFlatJsonValue(value)) return JSON.stringify(value);
  let text: string | undefined;
  try {
    text = JSON.stringify(value, function replacer(this: unknown, key: string, v: unknown) {
      const where = key === '' ? 'the value' : `property ${JSON.stringify(key)}`;
      switch (typeof v) {
        case 'function':
        case 'symbol':
        case 'bigint':
          throw new ReceiptValueNotSerializableError(what, `${where} is a ${typeof v}`);
        case 'number':
          if (!Number.isFinite(v)) throw new ReceiptValueNotSerializableError(what, `${where} is ${v}`);
          return v;
        case 'object':
          if (v instanceof Map || v instanceof Set || v instanceof WeakMap || v instanceof WeakSet) {
            throw new ReceiptValueNotSerializableError(what, `${where} is a ${v.constructor.name}`);
          }
          return v;
        default:
          return v;
      }
    });
  } catch (err) {
    if (err instanceof ReceiptValueNotSerializableError) throw err;
    throw new ReceiptValueNotSerializableError(what, (err as Error).message, { cause: err });
  }
  if (text === undefined) throw new ReceiptValueNotSerializableError(what, 'JSON.stringify produced nothing');
  return text;
}

/** A string, boolean, null or finite number: JSON writes it exactly as it is. */
const isExactScalar = (v: unknown): boolean =>
  v === null || typeof v === 'string' || typeof v === 'boolean' || (typeof v === 'number' && Number.isFinite(v));

/** An exact scalar, or a plain object whose own enumerable values all are. */
function isFlatJsonValue(value: unknown): boolean {
  if (isExactScalar(value)) return true;
  if (typeof value !== 'object' || Object.getPrototypeOf(value) !== Object.prototype) return false;
  for (const key of Object.keys(value as object)) {
    if (!isExactScalar((value as Record<string, unknown>)[key])) return false;
  }
  return true;
}

/** Parses text written by {@link toStoredJson}; {@link NO_VALUE} reads back as `undefined`. */
export function fromStoredJson(text: string): unknown {
  return text === NO_VALUE ? undefined : JSON.parse(text);
}
