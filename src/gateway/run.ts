/**
 * One gateway process as `tool-receipts gateway` runs it: the front with its
 * worker processes (the default), the front alone (`--front-only`), or one
 * worker (`--worker`), until it is told to stop.
 */
import type { Logger } from 'pino';
import type { GatewayConfig } from './config.js';
import { startGatewayFront, type GatewayFront } from './front.js';
import { superviseWorkers, type WorkerCommand } from './supervisor.js';
import { startGatewayWorker } from './worker.js';

/** What one gateway process runs. */
export interface GatewayRun {
  readonly config: GatewayConfig;
  readonly redisUrl: string;
  /** `front`: the front, and `workers` worker processes; `worker`: one worker in this process. */
  readonly role: 'front' | 'worker';
  readonly transport: 'http' | 'stdio';
  /** Worker processes the front keeps running (0: none, for a fleet whose workers run elsewhere). */
  readonly workers: number;
  /** How to start one worker process. */
  readonly workerCommand: WorkerCommand;
  readonly logger: Logger;
  /** Where the lines for a person go (never stdout over stdio). */
  readonly say: (line: string) => void;
  /** Resolves when the process should stop (a signal, its parent gone, stdin closed). */
  readonly stopped: Promise<void>;
}

/** Runs until `stopped`, then closes what it started. Start-up failures are thrown. */
export async function runGateway(run: GatewayRun): Promise<void> {
  const { config, logger } = run;
  if (run.role === 'worker') {
    const worker = await startGatewayWorker(config, run.redisUrl, logger);
    run.say(`tool-receipts gateway worker on queue ${config.queue.name}: ${worker.tools} tool(s) from ${upstreamNames(config)}.`);
    await run.stopped;
    await worker.close();
    return;
  }
  // The workers start beside the front (they connect to the same upstreams); a front that cannot start stops them.
  const pool = run.workers > 0 ? superviseWorkers(run.workers, run.workerCommand, logger) : undefined;
  let front: GatewayFront;
  try {
    front = await startGatewayFront(config, run.redisUrl, run.transport, logger);
  } catch (error) {
    await pool?.stop();
    throw error;
  }
  try {
    const workers = run.workers === 0 ? 'no worker processes (run them with --worker)' : `${run.workers} worker process(es)`;
    run.say(
      `tool-receipts gateway on ${front.url}: ${front.tools} tool(s) from ${upstreamNames(config)}, queue ${config.queue.name}, ${workers}. Stop it with Ctrl-C.`,
    );
    await Promise.race([run.stopped, front.ended]);
  } finally {
    await pool?.stop();
    await front.close();
  }
}

const upstreamNames = (config: GatewayConfig) => config.upstreams.map((u) => u.name).join(', ');
