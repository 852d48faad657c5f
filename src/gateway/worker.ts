/**
 * A gateway worker: a BullMQ worker on the gateway's queue whose processor
 * is `withToolReceipts` over every upstream's tools (`mcpTools`), so each
 * call the front enqueues runs at most once, recorded whole for the front to
 * answer with. Run as many as the load needs, on any machine that reaches
 * Redis and the upstreams.
 */
import { Worker } from 'bullmq';
import type { Logger } from 'pino';
import { hmacSha256Digest } from '../core/identity.js';
import { withToolReceipts } from '../bullmq/processor.js';
import type { McpToolDefinition } from '../mcp/tools.js';
import { mcpTools } from '../mcp/tools.js';
import type { GatewayConfig } from './config.js';
import { openRedis, type GatewayRedis } from './redis.js';
import { recordedMcpResult } from './results.js';
import { upstreamConnection, upstreamToolsOptions } from './upstreams.js';

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
      tools.push(...(await mcpTools(connection, upstreamToolsOptions(upstream, config, logger, recordedMcpResult))));
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
