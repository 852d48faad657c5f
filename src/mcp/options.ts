/**
 * The options of `mcpTools` and `McpConnection`, checked where they are
 * given: a value that cannot work (a timeout of 0, a misspelt option name, a
 * name prefix no model API takes) is refused with `mcp.invalid_options`
 * before the server is asked anything.
 */
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { jsonSchemaValidator } from '@modelcontextprotocol/sdk/validation';
import type { Logger } from 'pino';
import type { z } from 'zod';
import type { ReconcileAnswer, ReconcileContext } from '../bullmq/tools/define-tool.js';
import {
  booleanOption,
  checkOptions,
  functionOption,
  InvalidOptionsError,
  MAX_TIMER_MS,
  rule,
  shaped,
  wholeNumber,
  type OptionRule,
  type OptionsSchema,
} from '../core/options.js';
import { APPROVAL_OPTIONS_SCHEMA } from '../approvals/options.js';
import type { ApprovalOptions, ApprovalRule } from '../approvals/types.js';
import type { McpEffectOverride } from './effect.js';
import { InvalidMcpToolsOptionsError } from './errors.js';
import { MAX_NAME_PREFIX } from './tool-names.js';

/** Default limit of one `tools/call`, in ms (the MCP SDK's own default). */
export const DEFAULT_MCP_CALL_TIMEOUT_MS = 60_000;

/**
 * Default limit, in ms, of connecting (connect and `initialize`) and of
 * each `tools/list` page: 10 s.
 */
export const DEFAULT_MCP_CONNECT_TIMEOUT_MS = 10_000;

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
  /**
   * This tool's calls wait for a person before they run (see
   * docs/approvals.md): a rule as `defineTool`'s `approval` takes, of the
   * arguments as the server's schema parses them; `false` exempts the tool
   * from the `mcpTools` option. Default: the `mcpTools` option.
   */
  readonly approval?: ApprovalRule | false;
  /** What the approver is shown of this tool's arguments. Default: the `mcpTools` option, else nothing. */
  readonly redact?: (args: unknown) => unknown;
  /** How long its calls wait for a decision before they count as denied, in ms. Default: the `mcpTools` option, else 24 h. */
  readonly approvalTimeoutMs?: number;
}

/**
 * Which of a server's tools wait for approval: a rule as `defineTool` takes
 * (`'always'`, or a function of the arguments and `ctx.toolName`) for every
 * tool, or `'destructive'`: every tool the wrapper treats as destructive
 * (`destructiveHint: true`, or left out on a tool that is not read-only, as
 * MCP's default is; a tool's own `destructive` setting wins) waits for
 * approval on every call, the others never.
 */
export type McpApproval = ApprovalRule | 'destructive';

/** Options of `mcpTools`. */
export interface McpToolsOptions extends Omit<ApprovalOptions, 'approval'> {
  /** Which tools wait for a person's approval; per tool, `tools[name].approval` wins. Default: none. */
  readonly approval?: McpApproval;
  /** Per-tool settings, by the tool's name on the server. Naming a tool the server does not list is an error. */
  readonly tools?: Readonly<Record<string, McpToolOptions>>;
  /** Only these tools (names on the server), or those the predicate keeps. Default: all. */
  readonly include?: readonly string[] | ((name: string) => boolean);
  /**
   * Put before every tool name the model sees (`mail_`), to keep two
   * servers' tools apart: letters, digits, `_` and `-`, at most 40.
   */
  readonly namePrefix?: string;
  /**
   * Read the server's annotations (default true). With `false` every tool
   * without an override is opaque and destructive, whatever the server says.
   */
  readonly trustAnnotations?: boolean;
  /** Limit of one `tools/call`, in ms. Default {@link DEFAULT_MCP_CALL_TIMEOUT_MS}. */
  readonly timeoutMs?: number;
  /**
   * Limit, in ms, of connecting to the server (the connection's `connect`,
   * with `initialize`) and of each page of `tools/list`: a server that does
   * not answer in time fails `mcpTools` with `mcp.connect` or
   * `mcp.tool_list`. A call that cannot get a connected client in this time
   * never started. Default {@link DEFAULT_MCP_CONNECT_TIMEOUT_MS}.
   */
  readonly connectTimeoutMs?: number;
  /**
   * The JSON Schema validator for `inputSchema`s: a function that makes one
   * per tool, or one validator shared by every tool. Default: a new MCP SDK
   * Ajv validator per tool. A shared one is refused for tools whose schemas
   * declare the same `$id` (the SDK's Ajv would check both against the first).
   */
  readonly validator?: jsonSchemaValidator | (() => jsonSchemaValidator);
  /** What the model reads for a result. Default `mcpResultForModel`. */
  readonly renderResult?: (result: CallToolResult, tool: string) => unknown;
  /** Most `tools/list` pages to read. Default 100. */
  readonly maxPages?: number;
  /**
   * Where `mcpTools` warns, once per tool, of a tool offered under another
   * name or whose `inputSchema` gets no argument repair. Default: a pino
   * logger named `bullmq-tool-receipts`.
   */
  readonly logger?: Pick<Logger, 'warn'>;
}

const TOOL_OPTION_KEYS: ReadonlySet<string> = new Set([
  'effect',
  'destructive',
  'reconcile',
  'reconcileTimeoutMs',
  'keyWindowMs',
  'timeoutMs',
  'parallel',
  'aliases',
  'input',
  'approval',
  'redact',
  'approvalTimeoutMs',
]);
const EFFECT_CLASSES: ReadonlySet<unknown> = new Set(['read-only', 'idempotent', 'opaque', 'keyed']);
const timer = wholeNumber(1, 'ms', MAX_TIMER_MS);

/** Per-tool settings: each checked by name, in sentences that name the tool. */
const perTool: OptionRule = {
  check(value) {
    if (typeof value !== 'object' || value === null || Array.isArray(value))
      throw new InvalidMcpToolsOptionsError(
        "mcpTools: options.tools must be an object of per-tool settings, by the tool's name on the server",
      );
    for (const [name, o] of Object.entries(value as Record<string, unknown>)) {
      if (typeof o !== 'object' || o === null) throw new InvalidMcpToolsOptionsError(`mcpTools: options.tools.${name} must be an object`);
      const settings = o as Record<string, unknown>;
      const stray = Object.keys(settings).filter((key) => !TOOL_OPTION_KEYS.has(key));
      if (stray.length > 0) {
        throw new InvalidMcpToolsOptionsError(
          `mcpTools: options.tools.${name} has ${stray.join(', ')}, which is not a tool setting; use ${[...TOOL_OPTION_KEYS].join(', ')}`,
        );
      }
      const timeout = settings.timeoutMs;
      if (timeout !== undefined && !(typeof timeout === 'number' && Number.isSafeInteger(timeout) && timeout > 0)) {
        throw new InvalidMcpToolsOptionsError(`mcpTools: options.tools.${name}.timeoutMs must be a positive integer (ms)`);
      }
      const { approval, redact, approvalTimeoutMs } = settings;
      const approvals = { approval: approval === false ? undefined : approval, redact, approvalTimeoutMs };
      checkMcpOptions('mcpTools', approvals, APPROVAL_OPTIONS_SCHEMA, `tools.${name}`);
      if (settings.effect !== undefined && !EFFECT_CLASSES.has(settings.effect)) {
        throw new InvalidMcpToolsOptionsError(
          `mcpTools: options.tools.${name}.effect must be "read-only", "idempotent", "opaque" or "keyed"`,
        );
      }
    }
  },
};

const NAME_PREFIX = new RegExp(`^[A-Za-z0-9_-]{0,${MAX_NAME_PREFIX}}$`);

/** The rule of each `mcpTools` option. */
export const MCP_TOOLS_OPTIONS_SCHEMA: OptionsSchema<McpToolsOptions> = {
  tools: perTool,
  include: rule(
    'an array of tool names (as the server lists them) or a function of the name',
    (v) => typeof v === 'function' || (Array.isArray(v) && v.every((n) => typeof n === 'string')),
  ),
  namePrefix: rule(`letters, digits, "_" or "-", at most ${MAX_NAME_PREFIX} of them`, (v) => typeof v === 'string' && NAME_PREFIX.test(v)),
  trustAnnotations: booleanOption,
  timeoutMs: timer,
  connectTimeoutMs: timer,
  validator: rule(
    'a JSON Schema validator ({ getValidator(schema) }) or a function that makes one per tool',
    (v) =>
      typeof v === 'function' ||
      (typeof v === 'object' && v !== null && typeof (v as { getValidator?: unknown }).getValidator === 'function'),
    { hideStrings: true },
  ),
  renderResult: functionOption('a function (result, tool) => what the model reads'),
  maxPages: wholeNumber(1, 'pages'),
  approval: rule(
    `'always', 'destructive', or a function (args, ctx) => boolean | { reason }`,
    (v) => v === 'always' || v === 'destructive' || typeof v === 'function',
  ),
  redact: APPROVAL_OPTIONS_SCHEMA.redact,
  approvalTimeoutMs: APPROVAL_OPTIONS_SCHEMA.approvalTimeoutMs,
  logger: shaped('a pino logger (it needs warn), or left out for the default', ['warn']),
};

/** Options of `McpConnection`. */
export interface McpConnectionOptions {
  /**
   * After a connect that failed, how long the next one waits, in ms; doubled
   * for each further failure in a row, up to `maxReconnectDelayMs`. A use
   * meanwhile fails at once with `mcp.connect` (its call never started).
   * Default {@link DEFAULT_MCP_RECONNECT_DELAY_MS}.
   */
  readonly reconnectDelayMs?: number;
  /** The longest wait between two connects that fail, in ms. Default {@link DEFAULT_MCP_MAX_RECONNECT_DELAY_MS}. */
  readonly maxReconnectDelayMs?: number;
}

/** Default `McpConnectionOptions.reconnectDelayMs`: 250 ms. */
export const DEFAULT_MCP_RECONNECT_DELAY_MS = 250;
/** Default `McpConnectionOptions.maxReconnectDelayMs`: 10 s. */
export const DEFAULT_MCP_MAX_RECONNECT_DELAY_MS = 10_000;

/** The rule of each `McpConnection` option. */
export const MCP_CONNECTION_OPTIONS_SCHEMA: OptionsSchema<McpConnectionOptions> = {
  reconnectDelayMs: wholeNumber(0, 'ms', MAX_TIMER_MS),
  maxReconnectDelayMs: wholeNumber(0, 'ms', MAX_TIMER_MS),
};

/** `checkOptions`, refusing with `mcp.invalid_options` (this module's code) instead of `options.invalid`. */
export function checkMcpOptions<T>(owner: string, options: unknown, schema: OptionsSchema<T>, at?: string): T {
  try {
    return checkOptions(owner, options, schema, at);
  } catch (error) {
    if (error instanceof InvalidOptionsError) throw new InvalidMcpToolsOptionsError(error.message, { cause: error });
    throw error;
  }
}
