/**
 * Redis key layout of the limits.
 *
 * ```text
 * <prefix>:lim:tenant:{<tenant>}:<name>          hash: one tenant's count of limit <name>
 * <prefix>:lim:run:{<tenant>|<run>}:<name>       hash: one run's count (in the run's own slot)
 * <prefix>:lim:global:{<name>}:<name>            hash: the fleet's count
 * <that key>:due                                 sorted set: its pending reservations, by deadline
 * <that key>:done                                sorted set: its committed reservations, by window
 * <prefix>:lbd:{<tenant>|<run>}                  hash: what became of each reservation on the run's side
 * <prefix>:lim-index                             sorted set: every count's state key, by how long it is kept
 * ```
 *
 * A tenant's limits share the tenant's hash tag and a global limit has its
 * own, so on a Redis Cluster they live in other slots than the runs whose
 * calls they count: nothing is ever written to a limit and a run in one
 * script (see docs/limits.md for the protocol that makes that exact). The
 * scope is spelt out in the key, so no tenant's name can pass for a global
 * limit's tag; tenants and runs are percent-encoded as in `../redis/keys.ts`.
 */
import { assertWellFormedNames } from '../core/identity.js';
import { InvalidReceiptInputError } from '../redis/errors.js';
import { decodeKeyComponent, encodeKeyComponent, runHashTag } from '../redis/keys.js';
import { LIMIT_NAME, type LimitScope } from './definitions.js';

/** The three keys of one limit's count, in the order the limit scripts take them. */
export interface LimitKeys {
  /** The state hash: window, counters and the reservations' records. */
  readonly state: string;
  /** Pending reservations by deadline. */
  readonly due: string;
  /** Committed reservations by window. */
  readonly done: string;
}

/** Whose count: the tenant for `tenant`, the tenant and run for `run`, nothing for `global`. */
export interface LimitSubject {
  readonly tenantId?: string;
  readonly runId?: string;
}

/**
 * `subject`, when it names what `limit`'s scope needs (a tenant's limit its
 * tenant, a run's its tenant and run), each well formed; else throws
 * `receipt.invalid_input`.
 */
export function checkedSubject(limit: { readonly name: string; readonly per: LimitScope }, subject: LimitSubject): LimitSubject {
  const needs = limit.per === 'global' ? [] : limit.per === 'tenant' ? (['tenantId'] as const) : (['tenantId', 'runId'] as const);
  for (const field of needs) {
    const value = subject[field];
    if (typeof value !== 'string' || value === '') {
      throw new InvalidReceiptInputError(`limit ${JSON.stringify(limit.name)} is counted per ${limit.per}: give its ${field}`);
    }
    assertWellFormedNames({ [field === 'tenantId' ? 'tenant id' : 'run id']: value });
  }
  return subject;
}

/** The hash tag (braces included) of a count of limit `name` in `scope`; the subject must name what the scope needs. */
function limitHashTag(scope: LimitScope, name: string, subject: LimitSubject): string {
  if (scope === 'global') return `{${name}}`;
  if (scope === 'tenant') return `{${encodeKeyComponent(subject.tenantId!)}}`;
  return runHashTag(subject.tenantId!, subject.runId!);
}

/** The keys of the count of `limit` for `subject`, under `prefix`. */
export function limitRedisKeys(
  prefix: string,
  limit: { readonly name: string; readonly per: LimitScope },
  subject: LimitSubject,
): LimitKeys {
  const state = `${prefix}:lim:${limit.per}:${limitHashTag(limit.per, limit.name, subject)}:${limit.name}`;
  return { state, due: `${state}:due`, done: `${state}:done` };
}

/** The three keys of one in-flight cap's slots, in the order the slot scripts take them (see lua/includes/limit-slots.lua). */
export interface CapKeys {
  /** The state hash: k, the arrival counter, the holders' tokens and the places in line. */
  readonly state: string;
  /** The holders (receipt keys) by lease deadline. */
  readonly held: string;
  /** The calls waiting for a slot (receipt keys), by arrival. */
  readonly line: string;
}

/** The keys of the slots of in-flight cap `cap` for `subject`, under `prefix`: its state key is laid out as a window's count's. */
export function capRedisKeys(prefix: string, cap: { readonly name: string; readonly per: LimitScope }, subject: LimitSubject): CapKeys {
  const { state } = limitRedisKeys(prefix, cap, checkedSubject(cap, subject));
  return { state, held: `${state}:held`, line: `${state}:line` };
}

/** The bindings hash of a run: reservation id -> the receipt bound to it, or `revoked`. */
export function limitBindingsRedisKey(prefix: string, tenantId: string, runId: string): string {
  return `${prefix}:lbd:${runHashTag(tenantId, runId)}`;
}

/** The receipt field that holds the reservation a receipt's lifetime is counted by, for limit `name`. */
export function limitBindingField(name: string): string {
  return `limit:${name}`;
}

/** SCAN pattern matching every limit key under `prefix` (state keys and their `:due` and `:done`), for `redis-cli --scan`. */
export function limitScanPattern(prefix: string): string {
  return `${prefix}:lim:*`;
}

/** The index of every limit count under `prefix`: state keys, scored by how long their keys are kept. */
export function limitIndexRedisKey(prefix: string): string {
  return `${prefix}:lim-index`;
}

/** A count's scope, limit and subject, read back from its state key. */
export interface ParsedLimitKey {
  readonly per: LimitScope;
  readonly name: string;
  readonly tenantId?: string;
  readonly runId?: string;
}

const STATE_KEY = new RegExp(String.raw`^(tenant|run|global):\{([^{}]*)\}:(${LIMIT_NAME.source.slice(1, -1)})$`);

/**
 * The scope, limit and subject of a limit's state key under `prefix`, or
 * `undefined` for any other key (a `:due` or `:done` key, a longer prefix's).
 */
export function parseLimitRedisKey(prefix: string, redisKey: string): ParsedLimitKey | undefined {
  const head = `${prefix}:lim:`;
  if (!redisKey.startsWith(head)) return undefined;
  const match = STATE_KEY.exec(redisKey.slice(head.length));
  if (!match) return undefined;
  const [, per, tag, name] = match as unknown as [string, LimitScope, string, string];
  try {
    if (per === 'global') return tag === name ? { per, name } : undefined;
    const parts = tag.split('|');
    if (per === 'tenant') return parts.length === 1 ? { per, name, tenantId: decodeKeyComponent(tag) } : undefined;
    return parts.length === 2 ? { per, name, tenantId: decodeKeyComponent(parts[0]!), runId: decodeKeyComponent(parts[1]!) } : undefined;
  } catch {
    return undefined;
  }
}
