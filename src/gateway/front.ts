/**
 * The gateway's front: the MCP server clients talk to (Streamable HTTP, or
 * stdio for a client that spawns the gateway), which lists the upstreams'
 * tools and enqueues each call as a one-call turn on the gateway's queue.
 * It runs no tool itself; the workers do.
 */
import { randomUUID } from 'node:crypto';
import { Queue, QueueEvents } from 'bullmq';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import type { Logger } from 'pino';
import { createToolCallClient } from '../client/client.js';
import { InvalidOptionsError } from '../core/options.js';
import { loadCatalog } from './catalog.js';
import type { GatewayCalls } from './calls.js';
import type { GatewayConfig } from './config.js';
import { startHttpFront } from './http.js';
import { openRedis } from './redis.js';
import { gatewayServer } from './server.js';

/** The BullMQ job name of a gateway call. */
export const GATEWAY_JOB_NAME = 'mcp-call';

/** A running front. */
export interface GatewayFront {
  /** The HTTP endpoint, or `stdio`. */
  readonly url: string;
  /** How many tools it offers. */
  readonly tools: number;
  /** Resolves when the front ended by itself (over stdio: the client went away, or sent a message past the read cap). */
  readonly ended: Promise<void>;
  close(): Promise<void>;
}

/**
 * Starts the front: lists the upstreams' tools (a bad tool setting or an
 * upstream it cannot list stops it here), connects to the queue, then
 * listens on HTTP (`config.http`) or serves one client over stdio.
 */
export async function startGatewayFront(
  config: GatewayConfig,
  redisUrl: string,
  transport: 'http' | 'stdio',
  logger: Logger,
): Promise<GatewayFront> {
  if (transport === 'http' && config.http === undefined) {
    throw new InvalidOptionsError(
      config.source,
      'http',
      'the config has no `http` section to listen by: add one ({ "port": 8790 }), or serve one client over stdio (--stdio)',
    );
  }
  const catalog = await loadCatalog(config, logger);
  const redis = await openRedis(redisUrl);
  const connection = redis.connection();
  const prefix = config.queue.prefix === undefined ? {} : { prefix: config.queue.prefix };
  const queue = new Queue(config.queue.name, { connection, ...prefix });
  const queueEvents = new QueueEvents(config.queue.name, { connection: redis.connection(), ...prefix });
  const client = createToolCallClient({
    queue,
    queueEvents,
    jobName: GATEWAY_JOB_NAME,
    // The receipt is the record of a call: a finished job goes, and a call sent again meets its receipt.
    jobOptions: {
      attempts: config.worker.attempts,
      backoff: { type: 'exponential', delay: 500 },
      removeOnComplete: true,
      removeOnFail: true,
    },
  });
  const calls: GatewayCalls = { catalog, client, queue, redis: connection, config, logger };
  const closeQueue = async () => {
    await queueEvents.close().catch(() => undefined);
    await queue.close().catch(() => undefined);
    await redis.close();
  };
  try {
    await queueEvents.waitUntilReady();
    if (transport === 'stdio') {
      const server = gatewayServer(calls, { tenant: config.stdio.tenant, scope: { kind: 'stdio', id: randomUUID() } });
      const ended = new Promise<void>((resolve) => (server.onclose = resolve));
      // Read whole messages well past the argument cap, so an argument over it is answered (an MCP error), not dropped.
      await server.connect(
        new StdioServerTransport(process.stdin, process.stdout, { maxBufferSize: stdioReadCap(config.maxRequestBytes) }),
      );
      return {
        url: 'stdio',
        tools: catalog.size,
        ended,
        close: async () => {
          await server.close().catch(() => undefined);
          await closeQueue();
        },
      };
    }
    const http = await startHttpFront(
      config.http!,
      config.maxRequestBytes,
      (tenant, id) => gatewayServer(calls, { tenant, scope: { kind: 'session', id } }),
      logger,
    );
    return {
      url: http.url,
      tools: catalog.size,
      ended: new Promise<void>(() => undefined),
      close: async () => {
        await http.close();
        await closeQueue();
      },
    };
  } catch (error) {
    await closeQueue();
    throw error;
  }
}

/**
 * The largest message the stdio front reads: eight times the argument cap,
 * and at least 64 MiB. A message past it ends the session (the SDK's stdio
 * transport closes), and with it the gateway process.
 */
function stdioReadCap(maxRequestBytes: number): number {
  return Math.max(8 * maxRequestBytes, 64 * 1024 * 1024);
}
