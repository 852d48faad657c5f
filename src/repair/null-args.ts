/**
 * Drops arguments a model set to `null` when it meant "not given", where the
 * schema allows leaving them out.
 */
import type { z } from 'zod';
import { accepts, objectShapeOf } from './object-shape.js';

/**
 * Removes arguments that a model set to `null` when it meant "not given".
 *
 * A key is dropped when its value is `null`, the schema declares the field as
 * optional or defaulted (it accepts the field being absent), and the field does
 * not accept `null` itself. So a defaulted field gets its default, while a
 * required field keeps its `null` and fails validation with a clear message,
 * and a nullable field keeps `null` as the meaningful value it is. Keys the
 * schema does not declare are kept. The given object is not mutated.
 *
 * @param args - The arguments as sent.
 * @param schema - The tool's input schema; if it is not an object schema, nothing is dropped.
 * @returns A copy of `args` without the dropped keys.
 */
export function dropNullDefaultedArgs(args: Readonly<Record<string, unknown>>, schema: z.ZodType): Record<string, unknown> {
  const dropped = new Set(nullDefaultedKeys(args, schema));
  return Object.fromEntries(Object.entries(args).filter(([key]) => !dropped.has(key)));
}

/** The keys {@link dropNullDefaultedArgs} would drop, in key order. */
export function nullDefaultedKeys(args: Readonly<Record<string, unknown>>, schema: z.ZodType): string[] {
  const shape = objectShapeOf(schema);
  if (shape === undefined) return [];
  const keys: string[] = [];
  for (const [key, value] of Object.entries(args)) {
    if (value !== null || !Object.prototype.hasOwnProperty.call(shape, key)) continue;
    const field = shape[key];
    if (field === undefined) continue;
    if (accepts(field, undefined) && !accepts(field, null)) keys.push(key);
  }
  return keys;
}
