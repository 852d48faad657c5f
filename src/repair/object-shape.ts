/**
 * The field schemas of the object a tool input must be, looking through zod's
 * wrappers.
 */
import { z } from 'zod';

const WRAPPERS: ReadonlySet<string> = new Set(['optional', 'nullable', 'default', 'prefault', 'readonly', 'catch', 'nonoptional']);

/**
 * The field schemas of the object a tool input must be, looking through
 * wrappers (optional, default, readonly, ...) and the input side of pipes and
 * transforms. `undefined` when the schema is not an object schema.
 */
export function objectShapeOf(schema: z.ZodType): Readonly<Record<string, z.ZodType>> | undefined {
  let current: z.ZodType = schema;
  for (let hops = 0; hops < 32; hops++) {
    if (current instanceof z.ZodObject) return current.shape as Record<string, z.ZodType>;
    const def = current._zod.def as { type: string; innerType?: unknown; in?: unknown };
    const next = WRAPPERS.has(def.type) ? def.innerType : def.type === 'pipe' ? def.in : undefined;
    if (!(next instanceof z.ZodType)) return undefined;
    current = next;
  }
  return undefined;
}

/** Whether a schema accepts a value, treating a throwing schema as "no". */
export function accepts(schema: z.ZodType, value: unknown): boolean {
  try {
    return schema.safeParse(value).success;
  } catch {
    return false;
  }
}
