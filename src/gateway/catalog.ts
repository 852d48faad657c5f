/**
 * The tools the front offers: every upstream's `tools/list`, read once at
 * start, each tool under the name the workers give it (prefixed per
 * upstream when there are several), with its description, schemas and
 * annotations as the upstream wrote them, and the check its arguments must
 * pass before a call is enqueued.
 */
import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import type { Logger } from 'pino';
import { InvalidOptionsError } from '../core/options.js';
import { mcpTools, type McpToolDefinition } from '../mcp/tools.js';
import type { GatewayConfig, UpstreamConfig } from './config.js';
import { listUpstreamTools, unlistedTools, upstreamConnection, upstreamToolsOptions } from './upstreams.js';

/** One tool the front offers. */
export interface CatalogTool {
  /** As `tools/list` shows it: the upstream's tool under the gateway's name. */
  readonly listed: Tool;
  /** The definition the workers run it by: its input check among the rest. */
  readonly definition: McpToolDefinition;
  readonly upstream: string;
}

/** The front's tools, by the name clients call them by. */
export class Catalog {
  readonly #byName: ReadonlyMap<string, CatalogTool>;

  constructor(tools: readonly CatalogTool[]) {
    this.#byName = new Map(tools.map((tool) => [tool.listed.name, tool]));
  }

  /** Every tool, as `tools/list` answers. */
  listed(): Tool[] {
    return [...this.#byName.values()].map((tool) => tool.listed);
  }

  /** The tool a client calls by `name`, if the gateway offers one. */
  get(name: string): CatalogTool | undefined {
    return this.#byName.get(name);
  }

  get size(): number {
    return this.#byName.size;
  }
}

/**
 * Lists every upstream's tools (connecting to each, then closing) and makes
 * the catalog. An upstream that cannot be reached or listed, a tool setting
 * that names a tool the upstream does not list, and two tools that would be
 * offered under one name stop the front with `options.invalid` (or the
 * `mcp.*` error that says why).
 */
export async function loadCatalog(config: GatewayConfig, logger: Logger): Promise<Catalog> {
  const tools: CatalogTool[] = [];
  for (const upstream of config.upstreams) {
    const connection = upstreamConnection(upstream);
    try {
      const raw = await listUpstreamTools(connection);
      refuseUnlisted(config.source, upstream, raw);
      const definitions = await mcpTools(connection, upstreamToolsOptions(upstream, config, logger));
      for (const definition of definitions) {
        const original = raw.find((tool) => tool.name === definition.mcp.name);
        if (original === undefined) continue;
        const taken = tools.find((tool) => tool.listed.name === definition.name);
        if (taken !== undefined) {
          throw new InvalidOptionsError(
            config.source,
            `upstreams.${upstream.name}.prefix`,
            `the upstreams ${taken.upstream} and ${upstream.name} both offer a tool named ${JSON.stringify(definition.name)}; give them prefixes that keep their tools apart`,
          );
        }
        tools.push({ listed: { ...original, name: definition.name }, definition, upstream: upstream.name });
      }
    } catch (error) {
      // Thrown as it is (mcp.connect, mcp.tool_list, mcp.invalid_options…); the log names the upstream. A refused
      // config is the one sentence the CLI prints.
      if (!(error instanceof InvalidOptionsError)) {
        logger.error({ upstream: upstream.name, err: error }, 'could not list the tools of an upstream MCP server');
      }
      throw error;
    } finally {
      await connection.close().catch(() => undefined);
    }
  }
  return new Catalog(tools);
}

/** Refuses a tool setting of `upstream` that names a tool it does not list: `options.invalid`, naming the field. */
function refuseUnlisted(source: string, upstream: UpstreamConfig, listed: readonly Tool[]): void {
  const names = new Set(listed.map((tool) => tool.name));
  const [unlisted] = unlistedTools(upstream, names);
  if (unlisted === undefined) return;
  throw new InvalidOptionsError(
    source,
    `upstreams.${upstream.name}.tools`,
    `\`upstreams.${upstream.name}.tools\` names ${JSON.stringify(unlisted)}, which the upstream does not list; it lists ${[...names].map((name) => JSON.stringify(name)).join(', ')}`,
  );
}
