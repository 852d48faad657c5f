/**
 * `mcpTools`: an MCP server's tools as tools the wrapper runs with receipts,
 * each with its recovery.
 */
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { CallToolResultSchema, type CallToolResult, type Tool } from '@modelcontextprotocol/sdk/types.js';
import type { jsonSchemaValidator } from '@modelcontextprotocol/sdk/validation';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv';
import { pino } from 'pino';
import { NeverStartedError } from '../core/tiers.js';
import {
  defineTool,
  InvalidToolDefinitionError,
  type AnyToolDefinition,
  type ReconcileContext,
  type ToolAnnotations,
} from '../bullmq/tools/define-tool.js';
import { ToolErrorResult } from '../bullmq/tools/result-shaping.js';
import type { ApprovalOptions } from '../approvals/types.js';
import type { McpClientSource } from './connection.js';
import { resolveMcpEffect } from './effect.js';
import { InvalidMcpToolsOptionsError } from './errors.js';
import { classifyMcpFailure, httpStatusOf, mcpFailureError, SESSION_NOT_FOUND } from './failure.js';
import { mcpInputSchema } from './input-schema.js';
import {
  checkMcpOptions,
  DEFAULT_MCP_CALL_TIMEOUT_MS,
  DEFAULT_MCP_CONNECT_TIMEOUT_MS,
  MCP_TOOLS_OPTIONS_SCHEMA,
  type McpToolOptions,
  type McpToolsOptions,
} from './options.js';
import { mcpResultForModel } from './result.js';
import { connectedClient, listAllTools } from './tool-list.js';
import { modelToolNames, shownName } from './tool-names.js';

export {
  DEFAULT_MCP_CALL_TIMEOUT_MS,
  DEFAULT_MCP_CONNECT_TIMEOUT_MS,
  type McpReconcileContext,
  type McpToolOptions,
  type McpApproval,
  type McpToolsOptions,
} from './options.js';

/**
 * The `_meta` key under which every `tools/call` carries the call's
 * idempotency key (`ctx.idempotencyKey`): the same string for every attempt
 * of one model call, different for any other call. A server that wants to
 * deduplicate reads `request.params._meta["bullmq-tool-receipts/idempotency-key"]`.
 */
export const MCP_IDEMPOTENCY_KEY_META = 'bullmq-tool-receipts/idempotency-key';

/**
 * The tools of an MCP server as tool definitions `withToolReceipts` runs at
 * most once. Reads the whole `tools/list` (following `nextCursor`, each page
 * limited by `connectTimeoutMs`), and for each tool:
 * - its name for the model: its name on the server after `namePrefix`, or,
 *   when that is not a name model APIs take, a model-safe one (see
 *   {@link modelToolNames}; a warning names both);
 * - its effect class from the annotations with MCP's defaults, or from the
 *   team's override (see {@link resolveMcpEffect});
 * - its arguments checked against its own `inputSchema` before anything is
 *   claimed, with the wrapper's usual safe repair (never for a destructive
 *   tool) (see {@link mcpInputSchema}); a schema whose shape zod cannot
 *   import gets no repair, and a warning says so;
 * - its description and `inputSchema` shown to the model unchanged
 *   (`toolListForModel`), and what the server declared (its name there,
 *   `outputSchema`, annotations) in the definition's `mcp` field;
 * - a call is one `tools/call` of the name on the server, carrying the
 *   call's idempotency key in `_meta` under {@link MCP_IDEMPOTENCY_KEY_META},
 *   cancelled with `ctx.signal`, limited by `timeoutMs`. `isError: true` is
 *   an error result to the model and a completed call. A failure is
 *   classified by what it proves (see `classifyMcpFailure`): a call that may
 *   have reached the server is an unknown outcome; one refused with HTTP 404
 *   for its session, or sent on a client that had closed, is sent once more
 *   on a fresh client, since it never started.
 *
 * `source` is a connected `Client` or a {@link McpConnection} (reconnecting).
 */
export async function mcpTools(source: Client | McpClientSource, options: McpToolsOptions = {}): Promise<McpToolDefinition[]> {
  checkMcpOptions('mcpTools', options, MCP_TOOLS_OPTIONS_SCHEMA);
  const clients = clientSource(source);
  const connectTimeoutMs = options.connectTimeoutMs ?? DEFAULT_MCP_CONNECT_TIMEOUT_MS;
  const listed = await listAllTools(await connectedClient(clients, connectTimeoutMs), options.maxPages ?? 100, connectTimeoutMs);
  const overrides = options.tools ?? {};
  const unknown = Object.keys(overrides).filter((name) => !listed.some((tool) => tool.name === name));
  if (unknown.length > 0) {
    throw new InvalidMcpToolsOptionsError(
      `mcpTools: options.tools names ${unknown.map((n) => JSON.stringify(n)).join(', ')}, which the server does not list; it lists ${listed.map((t) => shownName(t.name)).join(', ') || 'no tools'}`,
    );
  }
  const include = options.include;
  const keep = include === undefined ? () => true : typeof include === 'function' ? include : (name: string) => include.includes(name);
  const kept = listed.filter((tool) => keep(tool.name));
  const validatorFor = validatorsOf(options.validator, kept);
  const logger = options.logger ?? pino({ name: 'bullmq-tool-receipts' });
  const names = modelToolNames(
    kept.map((tool) => tool.name),
    options.namePrefix ?? '',
  );
  // Tool names come from the server: only the team's own keys are read (a tool named "constructor" gets no override).
  const overrideOf = (name: string): McpToolOptions => (Object.hasOwn(overrides, name) ? overrides[name]! : {});
  return kept.map((tool, i) => {
    const name = names[i]!;
    if (name !== `${options.namePrefix ?? ''}${tool.name}`) {
      logger.warn(
        { tool: tool.name, offeredAs: name },
        'MCP tool name is not one model APIs take; offered under a model-safe name, called on the server under its own',
      );
    }
    const context: SharedByTools = { name, clients, validators: validatorFor(), logger, options, connectTimeoutMs };
    return mcpTool(tool, overrideOf(tool.name), context);
  });
}

/** A tool definition made from an MCP tool, with what the server declared about it. */
export type McpToolDefinition = AnyToolDefinition & {
  /** The tool as the server listed it: its name there, `outputSchema`, annotations. */
  readonly mcp: {
    readonly name: string;
    readonly outputSchema?: Readonly<Record<string, unknown>>;
    readonly annotations?: ToolAnnotations;
  };
};

/** What every tool of one `mcpTools` call shares, and its model-safe name. */
interface SharedByTools {
  readonly name: string;
  readonly clients: McpClientSource;
  readonly validators: jsonSchemaValidator;
  readonly logger: NonNullable<McpToolsOptions['logger']>;
  readonly options: McpToolsOptions;
  readonly connectTimeoutMs: number;
}

function mcpTool(tool: Tool, o: McpToolOptions, c: SharedByTools): McpToolDefinition {
  const { clients, options, connectTimeoutMs } = c;
  const resolved = resolveMcpEffect(tool.annotations, o, options.trustAnnotations ?? true);
  if (o.reconcile !== undefined && (resolved.effectClass === 'read-only' || resolved.effectClass === 'idempotent')) {
    throw new InvalidMcpToolsOptionsError(
      `mcpTools: options.tools.${tool.name} has a reconcile, but the tool is ${resolved.effectClass} (${o.effect === undefined ? 'from its annotations' : 'as you set'}), so an unknown outcome is simply run again and nothing would ask the reconcile; set effect: "opaque" (or "keyed") to use it`,
    );
  }
  const inputSchema = tool.inputSchema as Record<string, unknown>;
  const onRepairSkipped = (reason: string) =>
    c.logger.warn(
      { tool: tool.name, reason },
      'MCP tool inputSchema has a construct zod cannot import: its arguments are checked in full, but no schema-driven repair (decoding, dropping nulls) is made for it',
    );
  const input = o.input ?? mcpInputSchema(tool.name, inputSchema, c.validators, { onRepairSkipped });
  const timeout = o.timeoutMs ?? options.timeoutMs ?? DEFAULT_MCP_CALL_TIMEOUT_MS;
  const render = options.renderResult ?? mcpResultForModel;
  const reconcile = o.reconcile;
  /** A connected client for a call; when there is none, the call never started (and the server is not the tool). */
  const callClient = async (): Promise<Client> => {
    try {
      return await connectedClient(clients, connectTimeoutMs);
    } catch (error) {
      throw new NeverStartedError(`MCP tool ${tool.name} was not called: ${error instanceof Error ? error.message : String(error)}`, {
        cause: error,
        unreachable: true,
      });
    }
  };
  const definition = defineMcpTool(tool.name, {
    name: c.name,
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
    ...mcpApproval(o, options, resolved.destructive),
    ...(o.keyWindowMs !== undefined ? { keyWindowMs: o.keyWindowMs } : {}),
    ...(o.reconcileTimeoutMs !== undefined ? { reconcileTimeoutMs: o.reconcileTimeoutMs } : {}),
    ...(reconcile
      ? {
          reconcile: async (args: unknown, ctx: ReconcileContext) =>
            reconcile(
              args as Record<string, unknown>,
              Object.assign(Object.create(ctx) as ReconcileContext, { client: await connectedClient(clients, connectTimeoutMs) }),
            ),
        }
      : {}),
    async execute(args, ctx) {
      const send = (client: Client) =>
        client.request(
          {
            method: 'tools/call',
            params: {
              name: tool.name,
              arguments: args as Record<string, unknown>,
              _meta: { [MCP_IDEMPOTENCY_KEY_META]: ctx.idempotencyKey },
            },
          },
          CallToolResultSchema,
          { signal: ctx.signal, timeout, maxTotalTimeout: timeout },
        );
      let client = await callClient();
      if (ctx.signal.aborted)
        throw new NeverStartedError(`MCP tool ${tool.name} was not called: the attempt was aborted first`, { cause: ctx.signal.reason });
      let result: CallToolResult;
      try {
        result = await send(client).catch(async (error: unknown) => {
          // Refused before any session read it, on a client that is gone: once more, on a fresh client.
          if (!clientGone(error) || ctx.signal.aborted) throw error;
          const fresh = await callClient();
          if (fresh === client) throw error;
          client = fresh;
          return send(client);
        });
      } catch (error) {
        if (error instanceof NeverStartedError) throw error;
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

/**
 * The approval options of one MCP tool for `defineTool`: its own setting
 * over `mcpTools`'s (`false` exempts it), `'destructive'` resolved against
 * the tool's destructiveness.
 */
function mcpApproval(o: McpToolOptions, options: McpToolsOptions, destructive: boolean): ApprovalOptions {
  const shared = options.approval === 'destructive' ? (destructive ? 'always' : undefined) : options.approval;
  const rule = o.approval === false ? undefined : (o.approval ?? shared);
  if (rule === undefined) return {};
  const redact = o.redact ?? options.redact;
  const timeoutMs = o.approvalTimeoutMs ?? options.approvalTimeoutMs;
  return { approval: rule, ...(redact ? { redact } : {}), ...(timeoutMs !== undefined ? { approvalTimeoutMs: timeoutMs } : {}) };
}

/** A request refused because the client it went out on is gone: not connected, or its session unknown to the server. */
function clientGone(error: unknown): boolean {
  return (
    classifyMcpFailure(error) === 'unreachable' &&
    (httpStatusOf(error) === SESSION_NOT_FOUND || (error as Error).message === 'Not connected')
  );
}

/** `defineTool`, its refusal saying how to leave the tool out. */
function defineMcpTool(serverName: string, spec: Parameters<typeof defineTool>[0]): AnyToolDefinition {
  try {
    return defineTool(spec);
  } catch (error) {
    if (!(error instanceof InvalidToolDefinitionError)) throw error;
    throw new InvalidToolDefinitionError(
      `${error.message} (MCP tool ${shownName(serverName)}: fix its options.tools entry, or leave it out with \`include\`, e.g. include: (name) => name !== ${shownName(serverName)})`,
      { cause: error },
    );
  }
}

/**
 * The validator each tool gets: a new one per tool (the default, or from the
 * team's function), or the team's one validator for all, which is refused
 * for tools whose schemas share an `$id` (the SDK's Ajv caches by `$id`).
 */
function validatorsOf(given: McpToolsOptions['validator'], tools: readonly Tool[]): () => jsonSchemaValidator {
  if (given === undefined) return () => new AjvJsonSchemaValidator();
  if (typeof given === 'function') return given;
  const byId = new Map<string, string>();
  for (const tool of tools) {
    const id = (tool.inputSchema as { $id?: unknown }).$id;
    if (typeof id !== 'string') continue;
    const other = byId.get(id);
    if (other !== undefined) {
      throw new InvalidMcpToolsOptionsError(
        `mcpTools: the MCP tools ${shownName(other)} and ${shownName(tool.name)} both have an inputSchema with $id ${shownName(id)}, and one validator for all tools would check both against one schema; pass validator as a function that makes one per tool (() => new AjvJsonSchemaValidator(…))`,
      );
    }
    byId.set(id, tool.name);
  }
  return () => given;
}

function clientSource(source: Client | McpClientSource): McpClientSource {
  if (typeof source === 'object' && source !== null && typeof (source as McpClientSource).client === 'function')
    return source as McpClientSource;
  if (typeof source === 'object' && source !== null && typeof (source as Client).request === 'function') {
    const client = source as Client;
    return { client: async () => client };
  }
  throw new InvalidMcpToolsOptionsError('mcpTools needs a connected MCP Client (from @modelcontextprotocol/sdk) or an McpConnection');
}
