/**
 * The `upstreams` of the gateway's configuration: the MCP servers it fronts
 * (a command to spawn over stdio, or a Streamable HTTP URL), each with the
 * prefix its tools are listed under and the team's settings per tool.
 */
import path from 'node:path';
import {
  booleanOption,
  checkOptions,
  InvalidOptionsError,
  MAX_TIMER_MS,
  nonBlankString,
  oneOf,
  refuseOption,
  rule,
  stringList,
  wholeNumber,
  type OptionSite,
} from '../core/options.js';
import type { McpEffectClass } from '../mcp/effect.js';
import { secretValue } from './secret.js';

/** How the gateway reaches one upstream server. */
export type UpstreamTransport =
  | {
      readonly kind: 'stdio';
      readonly command: string;
      readonly args: readonly string[];
      /** Added to the SDK's default environment of a spawned server. */
      readonly env: Readonly<Record<string, string>>;
      readonly cwd: string;
    }
  | { readonly kind: 'http'; readonly url: string; readonly headers: Readonly<Record<string, string>> };

/** The team's settings for one tool of an upstream; each wins over the server's annotations. */
export interface UpstreamToolConfig {
  readonly effect?: McpEffectClass;
  readonly destructive?: boolean;
  readonly keyWindowMs?: number;
  readonly timeoutMs?: number;
  /** `true`: every call waits for a person; `false`: none does, whatever `approval` says. */
  readonly approval?: boolean;
}

/** One upstream server, checked. */
export interface UpstreamConfig {
  readonly name: string;
  /** Put before each of its tools' names in `tools/list` (`mail_`); empty for a lone upstream unless set. */
  readonly namePrefix: string;
  readonly transport: UpstreamTransport;
  /** By the tool's name on the server. */
  readonly tools: Readonly<Record<string, UpstreamToolConfig>>;
  /** Only these tools (names on the server). */
  readonly include: readonly string[] | undefined;
  readonly trustAnnotations: boolean;
  /** Limit of one `tools/call` to this server, in ms. */
  readonly timeoutMs: number | undefined;
}

const UPSTREAM_NAME = /^[A-Za-z0-9_-]{1,32}$/;
const PREFIX = /^[A-Za-z0-9_-]{0,40}$/;

type Env = Readonly<Record<string, string | undefined>>;

/** Checks `upstreams` (an object: name → server); at least one. */
export function checkUpstreams(value: unknown, site: OptionSite, baseDir: string, env: Env): UpstreamConfig[] {
  const entries = Object.entries(value as Record<string, unknown>);
  if (entries.length === 0) throw refuseOption(site, 'an object naming at least one upstream MCP server', value);
  const upstreams = entries.map(([name, spec]) => {
    const option = `${site.option}.${name}`;
    if (!UPSTREAM_NAME.test(name)) {
      throw new InvalidOptionsError(
        site.owner,
        option,
        `the upstream name ${JSON.stringify(name)} must be 1 to 32 letters, digits, _ or -`,
      );
    }
    return upstream(name, spec, { owner: site.owner, option }, entries.length > 1, baseDir, env);
  });
  const prefixes = new Map<string, string>();
  for (const u of upstreams) {
    const other = prefixes.get(u.namePrefix);
    if (other !== undefined) {
      throw new InvalidOptionsError(
        site.owner,
        `${site.option}.${u.name}.prefix`,
        `the upstreams ${other} and ${u.name} both list their tools under the prefix ${JSON.stringify(u.namePrefix)}; give each its own`,
      );
    }
    prefixes.set(u.namePrefix, u.name);
  }
  return upstreams;
}

const textMap = (value: unknown, site: OptionSite, env: Env): Record<string, string> => {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw refuseOption(site, 'an object of names to strings', value);
  return Object.fromEntries(
    Object.entries(value as Record<string, unknown>).map(([key, item]) => [
      key,
      secretValue(item, { owner: site.owner, option: `${site.option}.${key}` }, env),
    ]),
  );
};

function upstream(name: string, spec: unknown, site: OptionSite, several: boolean, baseDir: string, env: Env): UpstreamConfig {
  const u = checkOptions<{
    command?: string;
    args?: string[];
    env?: unknown;
    cwd?: string;
    url?: string;
    headers?: unknown;
    prefix?: string;
    tools?: unknown;
    include?: string[];
    trustAnnotations?: boolean;
    timeoutMs?: number;
  }>(
    site.owner,
    spec,
    {
      command: nonBlankString,
      args: rule('an array of strings', (v) => Array.isArray(v) && v.every((a) => typeof a === 'string')),
      env: rule('an object', (v) => typeof v === 'object' && v !== null && !Array.isArray(v)),
      cwd: nonBlankString,
      url: rule('an http:// or https:// URL', (v) => typeof v === 'string' && URL.canParse(v) && /^https?:$/.test(new URL(v).protocol)),
      headers: rule('an object', (v) => typeof v === 'object' && v !== null && !Array.isArray(v)),
      prefix: rule('letters, digits, _ and -, at most 40', (v) => typeof v === 'string' && PREFIX.test(v)),
      tools: rule('an object of tool names to settings', (v) => typeof v === 'object' && v !== null && !Array.isArray(v)),
      include: stringList,
      trustAnnotations: booleanOption,
      timeoutMs: wholeNumber(1, 'ms', MAX_TIMER_MS),
    },
    site.option,
  );
  const at = (field: string): OptionSite => ({ owner: site.owner, option: `${site.option}.${field}` });
  if ((u.command === undefined) === (u.url === undefined)) {
    throw new InvalidOptionsError(
      site.owner,
      site.option,
      `\`${site.option}\` needs either \`command\` (a server to spawn over stdio) or \`url\` (a Streamable HTTP endpoint), not ${u.command === undefined ? 'neither' : 'both'}`,
    );
  }
  const stdioOnly = (['args', 'env', 'cwd'] as const).find((field) => u[field] !== undefined);
  if (u.url !== undefined && stdioOnly !== undefined) {
    throw new InvalidOptionsError(
      site.owner,
      at(stdioOnly).option,
      `\`${at(stdioOnly).option}\` is for a spawned server; this upstream has a \`url\``,
    );
  }
  if (u.command !== undefined && u.headers !== undefined) {
    throw new InvalidOptionsError(
      site.owner,
      at('headers').option,
      `\`${at('headers').option}\` is for a \`url\` upstream; this one has a \`command\``,
    );
  }
  const transport: UpstreamTransport =
    u.command !== undefined
      ? {
          kind: 'stdio',
          command: u.command,
          args: u.args ?? [],
          env: u.env === undefined ? {} : textMap(u.env, at('env'), env),
          cwd: path.resolve(baseDir, u.cwd ?? '.'),
        }
      : { kind: 'http', url: u.url!, headers: u.headers === undefined ? {} : textMap(u.headers, at('headers'), env) };
  return {
    name,
    namePrefix: u.prefix ?? (several ? `${name}_` : ''),
    transport,
    tools: u.tools === undefined ? {} : toolSettings(u.tools, at('tools')),
    include: u.include,
    trustAnnotations: u.trustAnnotations ?? true,
    timeoutMs: u.timeoutMs,
  };
}

function toolSettings(value: unknown, site: OptionSite): Record<string, UpstreamToolConfig> {
  return Object.fromEntries(
    Object.entries(value as Record<string, unknown>).map(([tool, settings]) => [
      tool,
      checkOptions<UpstreamToolConfig>(
        site.owner,
        settings,
        {
          effect: oneOf('read-only', 'idempotent', 'opaque', 'keyed'),
          destructive: booleanOption,
          keyWindowMs: wholeNumber(1, 'ms'),
          timeoutMs: wholeNumber(1, 'ms', MAX_TIMER_MS),
          approval: booleanOption,
        },
        `${site.option}.${tool}`,
      ),
    ]),
  );
}
