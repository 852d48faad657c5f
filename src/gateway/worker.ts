/**
 * A gateway worker: a BullMQ worker on the gateway's queue whose processor
 * is `withToolReceipts` over every upstream's tools (`mcpTools`), so each
 * call the front enqueues runs at most once, recorded whole for the front to
 * answer with. Run as many as the load needs, on any machine that reaches
 * Redis and the upstreams.
 */
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { Worker } from 'bullmq';
import type { Logger } from 'pino';
import { hmacSha256Digest } from '../core/identity.js';
import { withToolReceipts } from '../bullmq/processor.js';
import type { McpToolDefinition } from '../mcp/tools.js';
import { mcpTools } from '../mcp/tools.js';
import type { McpConnection } from '../mcp/connection.js';
import type { GatewayConfig, UpstreamConfig } from './config.js';
import { openRedis, type GatewayRedis } from './redis.js';
import { recordedMcpResult } from './results.js';
import { listUpstreamTools, unlistedTools, upstreamConnection, upstreamToolsOptions } from './upstreams.js';

/** A running worker. */
export interface GatewayWorker {
  /** How many tools it runs. */
  readonly tools: number;
  /** Stops taking jobs, lets the running ones finish, and closes the connections. */
  close(): Promise<void>;
}

/**
 * Connects to every upstream (listing its tools, as the front does), then
 * takes jobs. An upstream that cannot be reached stops the start with its
 * `mcp.*` error.
 */
export async function startGatewayWorker(config: GatewayConfig, redisUrl: string, logger: Logger): Promise<GatewayWorker> {
  const connections = config.upstreams.map((upstream) => ({ upstream, connection: upstreamConnection(upstream) }));
  let redis: GatewayRedis | undefined;
  try {
    const tools: McpToolDefinition[] = [];
    for (const { upstream, connection } of connections) {
      const listed = await listedUpstream(upstream, connection, logger);
      // Recorded cut to the size the gateway keeps, so the capper never cuts the record's JSON.
      const record = (result: CallToolResult) => recordedMcpResult(result, config.maxResultChars);
      tools.push(...(await mcpTools(connection, upstreamToolsOptions(listed, config, logger, record))));
    }
    redis = await openRedis(redisUrl);
    const processor = withToolReceipts({
      redis: redis.connection(),
      tools,
      limits: config.limits,
      onAmbiguous: 'fail',
      maxResultChars: config.maxResultChars,
      logger,
      ...(config.prefix === undefined ? {} : { prefix: config.prefix }),
      ...(config.digestSecret === undefined ? {} : { digest: hmacSha256Digest(config.digestSecret) }),
      ...(config.worker.leaseMs === undefined ? {} : { leaseMs: config.worker.leaseMs }),
    });
    const worker = new Worker(config.queue.name, processor, {
      connection: redis.connection(),
      concurrency: config.worker.concurrency,
      // A job whose worker was killed comes back many times before BullMQ gives up on it: its receipt decides.
      maxStalledCount: 10,
      ...(config.queue.prefix === undefined ? {} : { prefix: config.queue.prefix }),
      ...(config.worker.lockDurationMs === undefined ? {} : { lockDuration: config.worker.lockDurationMs }),
      ...(config.worker.stalledIntervalMs === undefined ? {} : { stalledInterval: config.worker.stalledIntervalMs }),
    });
    processor.attach(worker);
    worker.on('error', (error) => logger.warn({ err: error }, 'the gateway worker met an error'));
    await worker.waitUntilReady();
    const opened = redis;
    return {
      tools: tools.length,
      close: async () => {
        await worker.close();
        for (const { connection } of connections) await connection.close().catch(() => undefined);
        await opened.close();
      },
    };
  } catch (error) {
    for (const { connection } of connections) await connection.close().catch(() => undefined);
    await redis?.close();
    throw error;
  }
}

/**
 * The upstream's config without the settings of tools it no longer lists.
 * The front refuses such a setting when it starts (`options.invalid`); a
 * worker (re)started later, after the upstream dropped a tool, runs every
 * tool still listed instead of failing its start, which would leave every
 * call of every upstream waiting on workers that never come up.
 */
async function listedUpstream(upstream: UpstreamConfig, connection: McpConnection, logger: Logger): Promise<UpstreamConfig> {
  if (Object.keys(upstream.tools).length === 0) return upstream;
  const names = new Set((await listUpstreamTools(connection)).map((tool) => tool.name));
  const dropped = unlistedTools(upstream, names);
  if (dropped.length === 0) return upstream;
  logger.error(
    { upstream: upstream.name, tools: dropped },
    'the upstream no longer lists tools the config sets; this worker runs the tools it lists, and calls of those fail as unknown tools',
  );
  return { ...upstream, tools: Object.fromEntries(Object.entries(upstream.tools).filter(([name]) => names.has(name))) };
}
