/**
 * Reads a zod schema (through its JSON Schema) for which JSON kinds an input
 * accepts at a place.
 */
import { z } from 'zod';
import { isRecord } from './types.js';

/**
 * Reads a zod schema, through its JSON Schema rendering, for one question:
 * which JSON kinds does the input accept at a given place? This is what lets
 * the decoder prove that a string sits where only an object or array belongs.
 *
 * The rendering uses the schema's input side (`io: 'input'`), so defaults and
 * optional fields look the way the model is allowed to send them. Anything the
 * reader does not understand (`allOf`, external `$ref`s, unrepresentable
 * types) is treated as "accepts anything", which turns decoding off there.
 */

/** A JSON kind a schema position may accept; `any` means unconstrained. */
export type JsonKind = 'object' | 'array' | 'string' | 'number' | 'integer' | 'boolean' | 'null' | 'any';

/** A JSON Schema node: an object, or `true`/`false`. */
export type SchemaNode = Record<string, unknown> | boolean;

const MAX_REF_HOPS = 32;
const views = new WeakMap<z.ZodType, SchemaView | null>();

/** The JSON Schema view of a zod schema, or `null` when it cannot be rendered. */
export function schemaViewOf(schema: z.ZodType): SchemaView | null {
  if (views.has(schema)) return views.get(schema) ?? null;
  let view: SchemaView | null = null;
  try {
    const json: unknown = z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' });
    view = isRecord(json) ? new SchemaView(json) : null;
  } catch {
    view = null;
  }
  views.set(schema, view);
  return view;
}

/**
 * Navigation over one rendered JSON Schema document. The document never
 * changes, so what a node accepts is worked out once per node: decoding asks
 * it for every value of every call.
 */
export class SchemaView {
  readonly #kinds = new WeakMap<object, ReadonlySet<JsonKind>>();
  readonly #onlyBranch = {
    object: new WeakMap<object, Record<string, unknown> | null>(),
    array: new WeakMap<object, Record<string, unknown> | null>(),
  };

  constructor(readonly root: Record<string, unknown>) {}

  /** The alternatives a node stands for, with `$ref`s followed and unions flattened. */
  branches(node: SchemaNode): SchemaNode[] {
    const out: SchemaNode[] = [];
    this.collect(node, out, 0);
    return out;
  }

  /** Every JSON kind accepted at a node. */
  kinds(node: SchemaNode): ReadonlySet<JsonKind> {
    if (typeof node === 'boolean') return this.kindsOf(node);
    let kinds = this.#kinds.get(node);
    if (kinds === undefined) {
      kinds = this.kindsOf(node);
      this.#kinds.set(node, kinds);
    }
    return kinds;
  }

  private kindsOf(node: SchemaNode): Set<JsonKind> {
    const kinds = new Set<JsonKind>();
    for (const branch of this.branches(node)) {
      for (const kind of leafKinds(branch)) kinds.add(kind);
    }
    return kinds;
  }

  /** The single branch of a node that describes values of `kind`, or `undefined` if none or several. */
  onlyBranch(node: SchemaNode, kind: 'object' | 'array'): Record<string, unknown> | undefined {
    if (typeof node === 'boolean') return this.onlyBranchOf(node, kind);
    const known = this.#onlyBranch[kind];
    let branch = known.get(node);
    if (branch === undefined) {
      branch = this.onlyBranchOf(node, kind) ?? null;
      known.set(node, branch);
    }
    return branch ?? undefined;
  }

  private onlyBranchOf(node: SchemaNode, kind: 'object' | 'array'): Record<string, unknown> | undefined {
    const matching = this.branches(node).filter(
      (branch): branch is Record<string, unknown> => isRecord(branch) && leafKinds(branch).includes(kind),
    );
    return matching.length === 1 ? matching[0] : undefined;
  }

  /** The schema of an object's property, or `undefined` when it is not described. */
  propertySchema(objectNode: Record<string, unknown>, key: string): SchemaNode | undefined {
    const properties = objectNode.properties;
    if (isRecord(properties) && Object.prototype.hasOwnProperty.call(properties, key)) {
      return asNode(properties[key]);
    }
    return asNode(objectNode.additionalProperties);
  }

  /** The schema of an array's element at `index`, or `undefined` when it is not described. */
  itemSchema(arrayNode: Record<string, unknown>, index: number): SchemaNode | undefined {
    const prefix = arrayNode.prefixItems;
    if (Array.isArray(prefix) && index < prefix.length) return asNode(prefix[index]);
    return asNode(arrayNode.items);
  }

  private collect(node: SchemaNode, out: SchemaNode[], hops: number): void {
    if (typeof node === 'boolean') {
      out.push(node);
      return;
    }
    if (typeof node.$ref === 'string') {
      const target = hops < MAX_REF_HOPS ? this.resolve(node.$ref) : undefined;
      if (target === undefined) out.push(true);
      else this.collect(target, out, hops + 1);
      return;
    }
    const union = Array.isArray(node.anyOf) ? node.anyOf : Array.isArray(node.oneOf) ? node.oneOf : undefined;
    if (union !== undefined) {
      for (const member of union) {
        const child = asNode(member);
        if (child === undefined) out.push(true);
        else this.collect(child, out, hops);
      }
      return;
    }
    out.push(node);
  }

  private resolve(ref: string): SchemaNode | undefined {
    if (!ref.startsWith('#')) return undefined;
    let current: unknown = this.root;
    const pointer = ref.slice(1);
    if (pointer === '') return this.root;
    if (!pointer.startsWith('/')) return undefined;
    for (const raw of pointer.slice(1).split('/')) {
      const key = raw.replace(/~1/g, '/').replace(/~0/g, '~');
      if (!isRecord(current) || !Object.prototype.hasOwnProperty.call(current, key)) return undefined;
      current = current[key];
    }
    return asNode(current);
  }
}

function asNode(value: unknown): SchemaNode | undefined {
  return typeof value === 'boolean' || isRecord(value) ? value : undefined;
}

const KNOWN_TYPES: ReadonlySet<string> = new Set(['object', 'array', 'string', 'number', 'integer', 'boolean', 'null']);

/** The kinds a flattened (ref-free, union-free) node accepts. */
function leafKinds(node: SchemaNode): JsonKind[] {
  if (node === true) return ['any'];
  if (node === false) return [];
  if (node.allOf !== undefined || node.not !== undefined) return ['any'];
  const type = node.type;
  if (typeof type === 'string') return KNOWN_TYPES.has(type) ? [type as JsonKind] : ['any'];
  if (Array.isArray(type)) {
    return type.map((t): JsonKind => (typeof t === 'string' && KNOWN_TYPES.has(t) ? (t as JsonKind) : 'any'));
  }
  if (Object.prototype.hasOwnProperty.call(node, 'const')) return [kindOfValue(node.const)];
  if (Array.isArray(node.enum)) return node.enum.map(kindOfValue);
  return ['any'];
}

function kindOfValue(value: unknown): JsonKind {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  switch (typeof value) {
    case 'string':
      return 'string';
    case 'number':
      return 'number';
    case 'boolean':
      return 'boolean';
    case 'object':
      return 'object';
    default:
      return 'any';
  }
}
