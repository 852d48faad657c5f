/**
 * The gateway's configuration file (`gateway.json`): read, checked field by
 * field, and resolved with its defaults, so a bad file stops the gateway
 * before anything listens or connects, with `options.invalid` naming the
 * field (`upstreams.mail.command`) and what it must be.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { isWellFormedText } from '../core/identity.js';
import {
  booleanOption,
  checkOptions,
  InvalidOptionsError,
  MAX_TIMER_MS,
  nonBlankString,
  oneOf,
  refuseOption,
  required,
  rule,
  stringList,
  wholeNumber,
  type OptionRule,
} from '../core/options.js';
import { leaseOption } from '../redis/options.js';
import { checkLimits, type AnyLimit } from '../limits/definitions.js';
import { isLoopbackHost, parseAllowedHost } from '../http/hosts.js';
import { MIN_TOKEN_LENGTH } from '../http/tokens.js';
import { normalizedOrigin } from '../http/origin.js';
import { secretValue } from './secret.js';
import { checkUpstreams, type UpstreamConfig } from './upstream-config.js';

export type { UpstreamConfig, UpstreamToolConfig, UpstreamTransport } from './upstream-config.js';

/** The gateway's HTTP front: where it listens and whom it serves. */
export interface HttpFrontConfig {
  readonly host: string;
  readonly port: number;
  /** The path the MCP endpoint answers on (`/mcp`). */
  readonly path: string;
  /** Bearer tokens, each naming its tenant. Empty: no token, every request is `tenant`'s (loopback only). */
  readonly tokens: readonly { readonly tenant: string; readonly token: string }[];
  /** The tenant of every request when there are no tokens. */
  readonly tenant: string;
  readonly allowedHosts: readonly string[];
  /** Browser origins allowed to call (`http://localhost:6274`); any other `Origin` is refused. */
  readonly allowedOrigins: readonly string[];
}

/** How the gateway asks for and waits on approvals. */
export interface GatewayApprovals {
  /** Ask the user at the MCP client (elicitation, where the client offers it) to approve or deny. */
  readonly elicit: boolean;
  /** How long a call waits for a decision before it is answered "awaiting approval", in ms. */
  readonly waitMs: number;
  /** How long a call may await approval before it counts as denied, in ms. */
  readonly timeoutMs: number | undefined;
}

/** The worker processes' settings. */
export interface GatewayWorkerConfig {
  /** Jobs one worker process runs at once. */
  readonly concurrency: number;
  /** BullMQ attempts of one call's job (retries of calls that never started). */
  readonly attempts: number;
  readonly leaseMs: number | undefined;
  readonly lockDurationMs: number | undefined;
  readonly stalledIntervalMs: number | undefined;
}

/** A checked configuration, defaults filled in. */
export interface GatewayConfig {
  /** The file it was read from, for messages (or `gateway config`). */
  readonly source: string;
  readonly redis: string | undefined;
  /** The receipts' key prefix; default the library's. */
  readonly prefix: string | undefined;
  /** The secret of the arguments' digest (HMAC-SHA256); without one, plain SHA-256. */
  readonly digestSecret: string | undefined;
  readonly queue: { readonly name: string; readonly prefix: string | undefined };
  readonly upstreams: readonly UpstreamConfig[];
  /** Which tools wait for approval unless a tool's own setting says otherwise. */
  readonly approval: 'destructive' | 'never';
  readonly approvals: GatewayApprovals;
  readonly limits: readonly AnyLimit[];
  readonly http: HttpFrontConfig | undefined;
  readonly stdio: { readonly tenant: string };
  readonly worker: GatewayWorkerConfig;
  /** Longest a front waits for one call before answering that it is still running, in ms. */
  readonly callWaitMs: number;
  /** Largest request body (HTTP) and largest arguments (either front), in bytes. */
  readonly maxRequestBytes: number;
  /** Most characters of one result kept and answered. */
  readonly maxResultChars: number;
}

export const DEFAULT_GATEWAY_PORT = 8790;
export const DEFAULT_GATEWAY_QUEUE = 'mcp-gateway';
export const DEFAULT_GATEWAY_TENANT = 'local';
export const DEFAULT_MAX_REQUEST_BYTES = 1024 * 1024;
export const DEFAULT_CALL_WAIT_MS = 10 * 60_000;
export const DEFAULT_APPROVAL_WAIT_MS = 50_000;
export const DEFAULT_MAX_RESULT_CHARS = 1_000_000;

/** A tenant name: stored in receipt keys, so non-empty, well-formed, and short. */
export const tenantRule: OptionRule = rule(
  'a tenant name (1 to 200 characters of well-formed text)',
  (v) => typeof v === 'string' && v.trim() !== '' && v.length <= 200 && isWellFormedText(v),
);

const TOP = {
  redis: rule('a redis:// or rediss:// URL', (v) => typeof v === 'string' && /^rediss?:\/\//.test(v)),
  prefix: nonBlankString,
  digestSecret: rule('a secret', () => true),
  queue: rule('an object', isObject),
  upstreams: required(rule('an object naming each upstream MCP server', isObject)),
  approval: oneOf('destructive', 'never'),
  approvals: rule('an object', isObject),
  limits: rule('an array of limits', Array.isArray),
  http: rule('an object', isObject),
  stdio: rule('an object', isObject),
  worker: rule('an object', isObject),
  callWaitMs: wholeNumber(1, 'ms', MAX_TIMER_MS),
  maxRequestBytes: wholeNumber(1024, 'bytes', 256 * 1024 * 1024),
  maxResultChars: wholeNumber(1000, 'characters'),
};

/** Reads and checks the file; throws `options.invalid` naming the field, or saying why the file could not be read. */
export function loadGatewayConfig(file: string, env: Readonly<Record<string, string | undefined>> = process.env): GatewayConfig {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw new InvalidOptionsError(file, undefined, `the gateway config could not be read (${(error as Error).message})`);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw new InvalidOptionsError(file, undefined, `the gateway config is not JSON: ${(error as Error).message}`);
  }
  return parseGatewayConfig(json, { source: file, baseDir: path.dirname(path.resolve(file)), env });
}

/**
 * Checks a parsed configuration and fills in its defaults. `baseDir`
 * resolves relative upstream working directories; `env` gives the secrets
 * written as `{ "env": "NAME" }`.
 */
export function parseGatewayConfig(
  json: unknown,
  where: { source?: string; baseDir?: string; env?: Readonly<Record<string, string | undefined>> } = {},
): GatewayConfig {
  const owner = where.source ?? 'gateway config';
  const env = where.env ?? process.env;
  const given = checkOptions<Record<keyof typeof TOP, unknown>>(owner, json, TOP);
  const queue = checkOptions<{ name?: string; prefix?: string }>(
    owner,
    given.queue ?? {},
    { name: rule('a queue name without ":"', (v) => typeof v === 'string' && v !== '' && !v.includes(':')), prefix: nonBlankString },
    'queue',
  );
  const approvals = checkOptions<{ elicit?: boolean; waitMs?: number; timeoutMs?: number }>(
    owner,
    given.approvals ?? {},
    { elicit: booleanOption, waitMs: wholeNumber(0, 'ms', MAX_TIMER_MS), timeoutMs: wholeNumber(1000, 'ms') },
    'approvals',
  );
  const stdio = checkOptions<{ tenant?: string }>(owner, given.stdio ?? {}, { tenant: tenantRule }, 'stdio');
  const worker = checkOptions<{
    concurrency?: number;
    attempts?: number;
    leaseMs?: number;
    lockDurationMs?: number;
    stalledIntervalMs?: number;
  }>(
    owner,
    given.worker ?? {},
    {
      concurrency: wholeNumber(1, 'jobs', 1000),
      attempts: wholeNumber(1, 'attempts', 100),
      leaseMs: leaseOption,
      lockDurationMs: wholeNumber(100, 'ms', MAX_TIMER_MS),
      stalledIntervalMs: wholeNumber(100, 'ms', MAX_TIMER_MS),
    },
    'worker',
  );
  return Object.freeze({
    source: owner,
    redis: given.redis as string | undefined,
    prefix: given.prefix as string | undefined,
    digestSecret: given.digestSecret === undefined ? undefined : secretValue(given.digestSecret, { owner, option: 'digestSecret' }, env),
    queue: { name: queue.name ?? DEFAULT_GATEWAY_QUEUE, prefix: queue.prefix },
    upstreams: checkUpstreams(given.upstreams, { owner, option: 'upstreams' }, where.baseDir ?? process.cwd(), env),
    approval: (given.approval as 'destructive' | 'never' | undefined) ?? 'destructive',
    approvals: {
      elicit: approvals.elicit ?? false,
      waitMs: approvals.waitMs ?? DEFAULT_APPROVAL_WAIT_MS,
      timeoutMs: approvals.timeoutMs,
    },
    limits: given.limits === undefined ? [] : checkLimits(given.limits, { owner, option: 'limits' }),
    http: given.http === undefined ? undefined : httpFront(given.http, owner, env),
    stdio: { tenant: stdio.tenant ?? DEFAULT_GATEWAY_TENANT },
    worker: {
      concurrency: worker.concurrency ?? 8,
      attempts: worker.attempts ?? 5,
      leaseMs: worker.leaseMs,
      lockDurationMs: worker.lockDurationMs,
      stalledIntervalMs: worker.stalledIntervalMs,
    },
    callWaitMs: (given.callWaitMs as number | undefined) ?? DEFAULT_CALL_WAIT_MS,
    maxRequestBytes: (given.maxRequestBytes as number | undefined) ?? DEFAULT_MAX_REQUEST_BYTES,
    maxResultChars: (given.maxResultChars as number | undefined) ?? DEFAULT_MAX_RESULT_CHARS,
  });
}

function isObject(value: unknown): boolean {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function httpFront(value: unknown, owner: string, env: Readonly<Record<string, string | undefined>>): HttpFrontConfig {
  const http = checkOptions<{
    host?: string;
    port?: number;
    path?: string;
    tokens?: unknown[];
    tenant?: string;
    allowedHosts?: string[];
    allowedOrigins?: string[];
  }>(
    owner,
    value,
    {
      host: nonBlankString,
      port: wholeNumber(0, 'a port', 65535),
      path: rule('a path such as /mcp', (v) => typeof v === 'string' && /^\/[A-Za-z0-9._~/-]*$/.test(v)),
      tokens: rule('an array of { "tenant", "token" } entries', Array.isArray),
      tenant: tenantRule,
      allowedHosts: stringList,
      allowedOrigins: stringList,
    },
    'http',
  );
  const tokens = (http.tokens ?? []).map((entry, i) => {
    const at = `http.tokens[${i}]`;
    const checked = checkOptions<{ tenant: string; token: unknown }>(
      owner,
      entry,
      { tenant: required(tenantRule), token: required(rule('a token', () => true)) },
      at,
    );
    const token = secretValue(checked.token, { owner, option: `${at}.token` }, env);
    if (token.length < MIN_TOKEN_LENGTH || /\s/.test(token)) {
      throw new InvalidOptionsError(owner, `${at}.token`, `\`${at}.token\` must be at least ${MIN_TOKEN_LENGTH} characters without spaces`);
    }
    return { tenant: checked.tenant, token };
  });
  if (new Set(tokens.map((t) => t.token)).size !== tokens.length) {
    throw new InvalidOptionsError(owner, 'http.tokens', '`http.tokens` names one token twice; each token maps to one tenant');
  }
  const host = http.host ?? '127.0.0.1';
  if (!isLoopbackHost(host) && tokens.length === 0) {
    throw new InvalidOptionsError(
      owner,
      'http.host',
      `\`http.host\` is ${JSON.stringify(host)}, beyond the loopback interface, so the gateway needs bearer tokens: add \`http.tokens\` ([{ "tenant": "acme", "token": { "env": "ACME_TOKEN" } }]) or bind 127.0.0.1`,
    );
  }
  for (const [i, entry] of (http.allowedHosts ?? []).entries()) {
    parseAllowedHost(entry, (message) => new InvalidOptionsError(owner, `http.allowedHosts[${i}]`, message));
  }
  const origins = (http.allowedOrigins ?? []).map((origin, i) => {
    const normal = normalizedOrigin(origin);
    if (normal === undefined)
      throw refuseOption({ owner, option: `http.allowedOrigins[${i}]` }, 'an origin such as http://localhost:6274', origin);
    return normal;
  });
  return {
    host,
    port: http.port ?? DEFAULT_GATEWAY_PORT,
    path: http.path ?? '/mcp',
    tokens,
    tenant: http.tenant ?? DEFAULT_GATEWAY_TENANT,
    allowedHosts: http.allowedHosts ?? [],
    allowedOrigins: origins,
  };
}
