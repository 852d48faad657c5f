import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { CallToolResultSchema, type CallToolResult, type Tool } from '@modelcontextprotocol/sdk/types.js';
import type { jsonSchemaValidator } from '@modelcontextprotocol/sdk/validation';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv';
import type { z } from 'zod';
import { NeverStartedError } from '../core/tiers.js';
import {
  defineTool,
  type AnyToolDefinition,
  type ReconcileAnswer,
  type ReconcileContext,
  type ToolAnnotations,
} from '../bullmq/define-tool.js';
import { ToolErrorResult } from '../bullmq/result-shaping.js';
import type { McpClientSource } from './connection.js';
import { resolveMcpEffect, type McpEffectOverride } from './effect.js';
import { InvalidMcpToolsOptionsError, McpToolListError } from './errors.js';
import { mcpFailureError } from './failure.js';
import { mcpInputSchema } from './input-schema.js';
import { mcpResultForModel } from './result.js';

/**
 * The `_meta` key under which every `tools/call` carries the call's
 * idempotency key (`ctx.idempotencyKey`): the same string for every attempt
 * of one model call, different for any other call. A server that wants to
 * deduplicate reads `request.params._meta["bullmq-tool-receipts/idempotency-key"]`.
 */
export const MCP_IDEMPOTENCY_KEY_META = 'bullmq-tool-receipts/idempotency-key';

/** Default limit of one `tools/call`, in ms (the MCP SDK's own default). */
export const DEFAULT_MCP_CALL_TIMEOUT_MS = 60_000;

/** What a team's `reconcile` for an MCP tool receives: the lost attempt, and a connected client to ask the server with. */
export interface McpReconcileContext extends ReconcileContext {
  readonly client: Client;
}

/** A team's settings for one of the server's tools. Each field set here wins over the server's annotations. */
export interface McpToolOptions extends McpEffectOverride {
  /**
   * For an opaque or keyed tool: asked whether an attempt whose outcome is
   * unknown had its effect land (look it up by `ctx.idempotencyKey`, say,
   * through `ctx.client`). See `ToolSpec.reconcile`.
   */
  reconcile?(args: Record<string, unknown>, ctx: McpReconcileContext): ReconcileAnswer | Promise<ReconcileAnswer>;
  readonly reconcileTimeoutMs?: number;
  /** For `effect: 'keyed'`: how long the server deduplicates a `_meta` idempotency key, in ms. */
  readonly keyWindowMs?: number;
  /** Limit of one `tools/call` of this tool, in ms. Default: the `mcpTools` option. */
  readonly timeoutMs?: number;
  /** Safe to run side by side with the other calls of its turn. Default false. */
  readonly parallel?: boolean;
  /** Alternative argument names models use, per parameter. */
  readonly aliases?: Readonly<Record<string, readonly string[]>>;
  /**
   * Validate this tool's arguments with this zod 4 schema instead of its
   * `inputSchema` (the model is still shown the server's schema).
   */
  readonly input?: z.ZodType;
}

/** Options of {@link mcpTools}. */
export interface McpToolsOptions {
  /** Per-tool settings, by the tool's name on the server. Naming a tool the server does not list is an error. */
  readonly tools?: Readonly<Record<string, McpToolOptions>>;
  /** Only these tools (names on the server), or those the predicate keeps. Default: all. */
  readonly include?: readonly string[] | ((name: string) => boolean);
  /** Put before every tool name the model sees (`mail_`), to keep two servers' tools apart. */
  readonly namePrefix?: string;
  /**
   * Read the server's annotations (default true). With `false` every tool
   * without an override is opaque and destructive, whatever the server says.
   */
  readonly trustAnnotations?: boolean;
  /** Limit of one `tools/call`, in ms. Default {@link DEFAULT_MCP_CALL_TIMEOUT_MS}. */
  readonly timeoutMs?: number;
  /** The JSON Schema validator for `inputSchema`s. Default: the MCP SDK's Ajv validator. */
  readonly validator?: jsonSchemaValidator;
  /** What the model reads for a result. Default {@link mcpResultForModel}. */
  readonly renderResult?: (result: CallToolResult, tool: string) => unknown;
  /** Most `tools/list` pages to read. Default 100. */
  readonly maxPages?: number;
}

const TOOL_OPTION_KEYS: ReadonlySet<string> = new Set([
  'effect', 'destructive', 'reconcile', 'reconcileTimeoutMs', 'keyWindowMs', 'timeoutMs', 'parallel', 'aliases', 'input',
]);
const EFFECT_CLASSES: ReadonlySet<unknown> = new Set(['read-only', 'idempotent', 'opaque', 'keyed']);

/**
 * The tools of an MCP server as tool definitions `withToolReceipts` runs at
 * most once. Reads the whole `tools/list` (following `nextCursor`), and for
 * each tool:
 * - its effect class from the annotations with MCP's defaults, or from the
 *   team's override (see {@link resolveMcpEffect});
 * - its arguments checked against its `inputSchema` before anything is
 *   claimed, with the wrapper's usual safe repair (never for a destructive
 *   tool) (see {@link mcpInputSchema});
 * - its description and `inputSchema` shown to the model unchanged
 *   (`toolListForModel`), and what the server declared (its name there,
 *   `outputSchema`, annotations) in the definition's `mcp` field;
 * - a call is one `tools/call` carrying the call's idempotency key in `_meta`
 *   under {@link MCP_IDEMPOTENCY_KEY_META}, cancelled with `ctx.signal`,
 *   limited by `timeoutMs`. `isError: true` is an error result to the model
 *   and a completed call. A failure is classified by what it proves (see
 *   `classifyMcpFailure`): a call that may have reached the server is an
 *   unknown outcome.
 *
 * `source` is a connected `Client` or a {@link McpConnection} (reconnecting).
 */
export async function mcpTools(source: Client | McpClientSource, options: McpToolsOptions = {}): Promise<McpToolDefinition[]> {
  checkOptions(options);
  const clients = clientSource(source);
  const listed = await listAllTools(await clients.client(), options.maxPages ?? 100);
  const overrides = options.tools ?? {};
  const unknown = Object.keys(overrides).filter((name) => !listed.some((tool) => tool.name === name));
  if (unknown.length > 0) {
    throw new InvalidMcpToolsOptionsError(
      `mcpTools: options.tools names ${unknown.map((n) => JSON.stringify(n)).join(', ')}, which the server does not list; it lists ${listed.map((t) => JSON.stringify(t.name)).join(', ') || 'no tools'}`,
    );
  }
  const keep = options.include === undefined ? () => true : typeof options.include === 'function' ? options.include : (name: string) => (options.include as readonly string[]).includes(name);
  const validators = options.validator ?? new AjvJsonSchemaValidator();
  // Tool names come from the server: only the team's own keys are read (a tool named "constructor" gets no override).
  const overrideOf = (name: string): McpToolOptions => (Object.hasOwn(overrides, name) ? overrides[name]! : {});
  return listed.filter((tool) => keep(tool.name)).map((tool) => mcpTool(tool, overrideOf(tool.name), clients, validators, options));
}

/** A tool definition made from an MCP tool, with what the server declared about it. */
export type McpToolDefinition = AnyToolDefinition & {
  /** The tool as the server listed it: its name there, `outputSchema`, annotations. */
  readonly mcp: { readonly name: string; readonly outputSchema?: Readonly<Record<string, unknown>>; readonly annotations?: ToolAnnotations };
};

function mcpTool(tool: Tool, o: McpToolOptions, clients: McpClientSource, validators: jsonSchemaValidator, options: McpToolsOptions): McpToolDefinition {
  const resolved = resolveMcpEffect(tool.annotations, o, options.trustAnnotations ?? true);
  if (o.reconcile !== undefined && (resolved.effectClass === 'read-only' || resolved.effectClass === 'idempotent')) {
    throw new InvalidMcpToolsOptionsError(
      `mcpTools: options.tools.${tool.name} has a reconcile, but the tool is ${resolved.effectClass} (${o.effect === undefined ? 'from its annotations' : 'as you set'}), so an unknown outcome is simply run again and nothing would ask the reconcile; set effect: "opaque" (or "keyed") to use it`,
    );
  }
  const name = `${options.namePrefix ?? ''}${tool.name}`;
  const inputSchema = tool.inputSchema as Record<string, unknown>;
  const input = o.input ?? mcpInputSchema(tool.name, inputSchema, validators);
  const timeout = o.timeoutMs ?? options.timeoutMs ?? DEFAULT_MCP_CALL_TIMEOUT_MS;
  const render = options.renderResult ?? mcpResultForModel;
  const reconcile = o.reconcile;
  const definition = defineTool({
    name,
    description: tool.description ?? '',
    input,
    inputJsonSchema: inputSchema,
    effect: resolved.effect,
    readOnly: resolved.readOnly,
    idempotent: resolved.idempotent,
    destructive: resolved.destructive,
    parallel: o.parallel ?? false,
    ...(tool.annotations ? { annotations: tool.annotations } : {}),
    ...(o.aliases ? { aliases: o.aliases } : {}),
    ...(o.keyWindowMs !== undefined ? { keyWindowMs: o.keyWindowMs } : {}),
    ...(o.reconcileTimeoutMs !== undefined ? { reconcileTimeoutMs: o.reconcileTimeoutMs } : {}),
    ...(reconcile
      ? {
          reconcile: async (args: unknown, ctx: ReconcileContext) =>
            reconcile(args as Record<string, unknown>, Object.assign(Object.create(ctx) as ReconcileContext, { client: await clients.client() })),
        }
      : {}),
    async execute(args, ctx) {
      let client: Client;
      try {
        client = await clients.client();
      } catch (error) {
        throw new NeverStartedError(`MCP tool ${tool.name} was not called: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
      }
      if (ctx.signal.aborted) throw new NeverStartedError(`MCP tool ${tool.name} was not called: the attempt was aborted first`, { cause: ctx.signal.reason });
      let result: CallToolResult;
      try {
        result = await client.request(
          { method: 'tools/call', params: { name: tool.name, arguments: args as Record<string, unknown>, _meta: { [MCP_IDEMPOTENCY_KEY_META]: ctx.idempotencyKey } } },
          CallToolResultSchema,
          { signal: ctx.signal, timeout, maxTotalTimeout: timeout },
        );
      } catch (error) {
        throw mcpFailureError(tool.name, error, resolved.readOnly);
      }
      const value = render(result, tool.name);
      return result.isError === true ? new ToolErrorResult(value) : value;
    },
  });
  const mcp = {
    name: tool.name,
    ...(tool.outputSchema ? { outputSchema: tool.outputSchema as Record<string, unknown> } : {}),
    ...(tool.annotations ? { annotations: tool.annotations } : {}),
  };
  return Object.freeze({ ...definition, mcp });
}

function clientSource(source: Client | McpClientSource): McpClientSource {
  if (typeof source === 'object' && source !== null && typeof (source as McpClientSource).client === 'function') return source as McpClientSource;
  if (typeof source === 'object' && source !== null && typeof (source as Client).request === 'function') {
    const client = source as Client;
    return { client: async () => client };
  }
  throw new InvalidMcpToolsOptionsError('mcpTools needs a connected MCP Client (from @modelcontextprotocol/sdk) or an McpConnection');
}

/** Every page of `tools/list`, in order. */
async function listAllTools(client: Client, maxPages: number): Promise<Tool[]> {
  const tools: Tool[] = [];
  const seen = new Set<string>();
  let cursor: string | undefined;
  for (let page = 0; page < maxPages; page++) {
    let answer: Awaited<ReturnType<Client['listTools']>>;
    try {
      answer = await client.listTools(cursor === undefined ? {} : { cursor });
    } catch (cause) {
      throw new McpToolListError(`tools/list failed on page ${page + 1}: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
    }
    tools.push(...answer.tools);
    cursor = answer.nextCursor;
    if (cursor === undefined) return tools;
    if (seen.has(cursor)) throw new McpToolListError(`tools/list returned the cursor ${JSON.stringify(cursor)} twice; the list never ends`);
    seen.add(cursor);
  }
  throw new McpToolListError(`tools/list has more than ${maxPages} pages; raise maxPages to read them all`);
}

function checkOptions(options: McpToolsOptions): void {
  if (typeof options !== 'object' || options === null) throw new InvalidMcpToolsOptionsError('mcpTools options must be an object');
  for (const [name, o] of Object.entries(options.tools ?? {})) {
    if (typeof o !== 'object' || o === null) throw new InvalidMcpToolsOptionsError(`mcpTools: options.tools.${name} must be an object`);
    const stray = Object.keys(o).filter((key) => !TOOL_OPTION_KEYS.has(key));
    if (stray.length > 0) {
      throw new InvalidMcpToolsOptionsError(`mcpTools: options.tools.${name} has ${stray.join(', ')}, which is not a tool setting; use ${[...TOOL_OPTION_KEYS].join(', ')}`);
    }
    if (o.timeoutMs !== undefined && !(Number.isSafeInteger(o.timeoutMs) && o.timeoutMs > 0)) {
      throw new InvalidMcpToolsOptionsError(`mcpTools: options.tools.${name}.timeoutMs must be a positive integer (ms)`);
    }
    if (o.effect !== undefined && !EFFECT_CLASSES.has(o.effect)) {
      throw new InvalidMcpToolsOptionsError(`mcpTools: options.tools.${name}.effect must be "read-only", "idempotent", "opaque" or "keyed"`);
    }
  }
  for (const limit of ['timeoutMs', 'maxPages'] as const) {
    const n = options[limit];
    if (n !== undefined && !(Number.isSafeInteger(n) && n > 0)) throw new InvalidMcpToolsOptionsError(`mcpTools: ${limit} must be a positive integer`);
  }
}
