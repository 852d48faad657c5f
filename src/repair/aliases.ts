/**
 * Parameter aliases: keys a model used for a parameter under another name,
 * renamed where the schema proves it.
 */
import type { z } from 'zod';
import { InvalidAliasError } from './errors.js';
import { nullDefaultedKeys } from './null-args.js';
import { objectShapeOf } from './object-shape.js';
import { isRecord } from './types.js';

/** Other keys a model may use for a parameter, by parameter name (`{ baseUrl: ['url'] }`). */
export type ParamAliases = Readonly<Record<string, readonly string[]>>;

/** One alias key renamed to its parameter. */
export interface AliasCorrection {
  from: string;
  to: string;
}

/** A parameter supplied under more than one key. */
export interface AliasConflict {
  param: string;
  keys: string[];
}

/** What {@link toolArgumentsFor} made of a call's arguments. */
export interface ToolArguments {
  /** The arguments the tool should see; exactly the given value when there was a conflict. */
  args: unknown;
  /** The alias keys that were renamed. */
  corrections: AliasCorrection[];
  /** The parameters whose `null` was dropped (see `dropNullDefaultedArgs`). */
  dropped: string[];
  /** Set when one parameter arrived under several keys; nothing was changed then. */
  conflict?: AliasConflict;
}

/**
 * The arguments of a call as the tool should see them: alias keys renamed to
 * their parameter (`url` becomes `baseUrl`), then `null` values of optional or
 * defaulted parameters dropped.
 *
 * Never throws. When one parameter arrives under two or more keys, the
 * arguments are returned as written and `conflict` says which; the caller then
 * fails the call as never started (see `ArgumentConflictError`). Key order is
 * kept, a renamed key taking the alias's place. An alias that is ambiguous
 * (listed for two parameters, or itself the name of a parameter) is ignored;
 * {@link assertValidAliases} reports such tables up front. Arguments that are
 * not an object, or that have nothing to rename or drop, are returned
 * unchanged (the same value, not a copy).
 */
export function toolArgumentsFor(args: unknown, tool: { schema: z.ZodType | null; aliases?: ParamAliases }): ToolArguments {
  if (!isRecord(args)) return { args, corrections: [], dropped: [] };
  // The usual call: no alias table and no null to drop, so nothing can change. Skipping the
  // walk and the copy saves a few µs on every call (the bench measures it).
  if (Object.keys(tool.aliases ?? {}).length === 0 && !Object.values(args).includes(null)) {
    return { args, corrections: [], dropped: [] };
  }
  const params = declaredParams(tool.schema, tool.aliases);
  const aliasToParam = usableAliases(tool.aliases, params);

  const given = (key: string): boolean => Object.prototype.hasOwnProperty.call(args, key) && args[key] !== undefined;
  // A null the parameter takes as "not given" (optional or defaulted) is dropped, so it clashes with no other key.
  const nullIsAbsent = (param: string): boolean => tool.schema !== null && nullDefaultedKeys({ [param]: null }, tool.schema).length > 0;
  const absentNull = (key: string): boolean => args[key] === null && nullIsAbsent(aliasToParam.get(key) ?? key);
  for (const param of Object.keys(tool.aliases ?? {})) {
    const keys = [param, ...aliasesOf(param, aliasToParam)].filter((key) => given(key) && !absentNull(key));
    if (keys.length > 1) return { args, corrections: [], dropped: [], conflict: { param, keys } };
  }

  const corrections: AliasCorrection[] = [];
  const droppedBefore: string[] = [];
  // A null "not given" under one of a parameter's keys while another key gives it a value: dropped here, under its
  // own name, or renamed (or kept) it could overwrite that value.
  const keysOf = (param: string): string[] => [param, ...aliasesOf(param, aliasToParam)];
  const overwrites = (key: string, param: string): boolean =>
    absentNull(key) && keysOf(param).some((other) => other !== key && given(other) && !absentNull(other));
  const renamed = Object.fromEntries(
    Object.entries(args).flatMap(([key, value]): [string, unknown][] => {
      const param = aliasToParam.get(key);
      const owner = param ?? (Object.prototype.hasOwnProperty.call(tool.aliases ?? {}, key) ? key : undefined);
      if (owner !== undefined && overwrites(key, owner)) {
        droppedBefore.push(key);
        return [];
      }
      if (param === undefined || value === undefined) return [[key, value]];
      corrections.push({ from: key, to: param });
      return [[param, value]];
    }),
  );
  const droppedAfter = tool.schema === null ? [] : nullDefaultedKeys(renamed, tool.schema);
  const finalArgs = Object.fromEntries(Object.entries(renamed).filter(([key]) => !droppedAfter.includes(key)));
  return { args: finalArgs, corrections, dropped: [...droppedBefore, ...droppedAfter] };
}

/**
 * Checks an alias table against a tool's schema and throws
 * {@link InvalidAliasError} listing every problem: an alias that is also a
 * parameter name, an alias given to two parameters, or an aliased parameter
 * the schema does not declare (when the schema is an object schema).
 */
export function assertValidAliases(schema: z.ZodType | null, aliases: ParamAliases): void {
  const shape = schema === null ? undefined : objectShapeOf(schema);
  const params = declaredParams(schema, aliases);
  const owner = new Map<string, string>();
  const problems: string[] = [];
  for (const [param, keys] of Object.entries(aliases)) {
    if (shape !== undefined && !Object.prototype.hasOwnProperty.call(shape, param)) {
      problems.push(`"${param}" has aliases but is not a parameter of the schema`);
    }
    for (const key of keys) {
      if (params.has(key)) problems.push(`alias "${key}" of "${param}" is itself a parameter name`);
      const previous = owner.get(key);
      if (previous !== undefined && previous !== param) {
        problems.push(`alias "${key}" is given to both "${previous}" and "${param}"`);
      }
      owner.set(key, param);
    }
  }
  if (problems.length > 0) throw new InvalidAliasError(problems);
}

function declaredParams(schema: z.ZodType | null, aliases: ParamAliases | undefined): Set<string> {
  const shape = schema === null ? undefined : objectShapeOf(schema);
  return new Set([...Object.keys(shape ?? {}), ...Object.keys(aliases ?? {})]);
}

function usableAliases(aliases: ParamAliases | undefined, params: ReadonlySet<string>): Map<string, string> {
  const owners = new Map<string, Set<string>>();
  for (const [param, keys] of Object.entries(aliases ?? {})) {
    for (const key of keys) {
      if (params.has(key)) continue;
      const set = owners.get(key) ?? new Set<string>();
      set.add(param);
      owners.set(key, set);
    }
  }
  const usable = new Map<string, string>();
  for (const [key, set] of owners) {
    const [only] = [...set];
    if (set.size === 1 && only !== undefined) usable.set(key, only);
  }
  return usable;
}

function aliasesOf(param: string, aliasToParam: ReadonlyMap<string, string>): string[] {
  return [...aliasToParam].filter(([, owner]) => owner === param).map(([key]) => key);
}
