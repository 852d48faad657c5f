/**
 * `tool-receipts gateway --config gateway.json`: the MCP gateway (see
 * `src/gateway` and docs/gateway.md) as one process: the front and its
 * worker processes, the front alone, or one worker. Loads the gateway (and
 * the MCP SDK it needs) only when run.
 */
import path from 'node:path';
import { pino } from 'pino';
import { isValidKeyPrefix } from '../../redis/keys.js';
import { expectPositionals, stringOption, wholeNumberOption, type CommandSpec, type OfflineCommandContext } from '../command.js';
import { maskedUrl } from '../../core/errors.js';
import { checkedUrl, cliConnection, DEFAULT_REDIS_URL } from '../connect.js';
import { CliUsageError } from '../errors.js';
import { writeLine } from '../format.js';
import { GATEWAY_STOP_GRACE_MS } from '../../gateway/supervisor.js';

/** Arguments of {@link gatewayCommand}. */
export interface GatewayArgs {
  readonly config: string;
  readonly role: 'front' | 'worker';
  readonly workers: number;
  readonly stdio: boolean;
  readonly redis: string | undefined;
  readonly prefix: string | undefined;
}

async function loadGateway(): Promise<typeof import('../../gateway/index.js')> {
  try {
    return await import('../../gateway/index.js');
  } catch (error) {
    if ((error as { code?: unknown }).code === 'ERR_MODULE_NOT_FOUND') {
      throw new CliUsageError(
        `gateway needs the MCP SDK and bullmq: npm install @modelcontextprotocol/sdk bullmq ioredis (${(error as Error).message})`,
        'gateway',
      );
    }
    throw error;
  }
}

/** Runs the gateway until SIGINT or SIGTERM (a worker also stops when its parent goes; over stdio, when the client closes stdin). */
export async function gatewayCommand(context: OfflineCommandContext<GatewayArgs>): Promise<void> {
  try {
    await serve(context);
  } finally {
    // What would keep the process alive once everything is closed, or once it failed to start: a worker's IPC
    // channel to the gateway that started it, the stdio client's stdin.
    if (context.args.role === 'worker' && process.connected) process.disconnect();
    if (context.args.stdio) process.stdin.destroy();
  }
}

async function serve({ out, args, env = {} }: OfflineCommandContext<GatewayArgs>): Promise<void> {
  const gateway = await loadGateway();
  const loaded = gateway.loadGatewayConfig(args.config, env);
  const config = args.prefix === undefined ? loaded : { ...loaded, prefix: args.prefix };
  const url = checkedUrl(args.redis ?? env['REDIS_URL'] ?? config.redis ?? DEFAULT_REDIS_URL);
  // Fail fast, in one sentence, when Redis does not answer; the gateway's own connections then ride out restarts.
  const probe = await cliConnection({ url, cluster: false }, env);
  try {
    await probe.open(maskedUrl(url));
  } finally {
    await probe.close();
  }
  // Logs go to stderr: over stdio, stdout is the MCP channel.
  const logger = pino({ name: 'tool-receipts-gateway', level: env['LOG_LEVEL'] ?? 'info' }, pino.destination({ fd: 2, sync: true }));
  const stopped = new Promise<void>((resolve) => {
    process.once('SIGINT', () => resolve());
    process.once('SIGTERM', () => resolve());
    if (process.send !== undefined) process.once('disconnect', () => resolve());
    if (args.stdio && args.role === 'front') process.stdin.once('close', () => resolve());
  });
  // Told to stop, the process lets running calls finish for a while, then exits whatever still waits (a Redis
  // that is gone, a call that does not end): their jobs are taken over as after a crash.
  void stopped.then(() => setTimeout(() => process.exit(process.exitCode ?? 0), GATEWAY_STOP_GRACE_MS).unref());
  await gateway.runGateway({
    config,
    redisUrl: url,
    role: args.role,
    transport: args.stdio ? 'stdio' : 'http',
    workers: args.workers,
    workerCommand: {
      script: process.argv[1]!,
      args: ['gateway', '--config', path.resolve(args.config), '--worker', ...(args.prefix === undefined ? [] : ['--prefix', args.prefix])],
      execArgv: process.execArgv,
      env: { ...process.env, ...env, REDIS_URL: url },
    },
    logger,
    say: (line) => (args.stdio ? logger.info(line) : writeLine(out, line)),
    stopped,
  });
}

/** The `gateway` command. */
export const gatewaySpec: CommandSpec<GatewayArgs> = {
  name: 'gateway',
  synopsis: 'gateway --config <file>',
  summary: "serve MCP servers' tools to any MCP client, each call at most once",
  help: `Usage: tool-receipts gateway --config <gateway.json> [--workers <n>] [--front-only | --worker] [--stdio] [connection options]

An MCP server (Streamable HTTP, or stdio) in front of the MCP servers the
config names: it lists their tools, and runs every tools/call as a job on a
BullMQ queue, on worker processes that call the upstream with receipts, so a
call sent again (a new request id, the same call) replays or waits instead of
running twice, and a call cut off mid-way is answered as unknown, never run
again. See docs/gateway.md for the config file.

Options:
  --config <file>   the gateway's JSON config (upstreams, tokens, approvals, limits)
  --workers <n>     worker processes this process starts and keeps running
                    (default 1; 0 with a fleet of --worker processes elsewhere)
  --front-only      the front alone (the same as --workers 0)
  --worker          one worker, no front: for a fleet
  --stdio           serve one client over stdin/stdout (a desktop client that
                    spawns the gateway) instead of the config's http listener

Redis: --redis, else $REDIS_URL, else the config's "redis", else ${DEFAULT_REDIS_URL}.
--prefix (the receipts' key prefix) wins over the config's "prefix".`,
  options: {
    config: { type: 'string' },
    workers: { type: 'string' },
    'front-only': { type: 'boolean' },
    worker: { type: 'boolean' },
    stdio: { type: 'boolean' },
  },
  redis: false,
  parse(values, positionals) {
    expectPositionals('gateway', positionals, []);
    if (values['cluster'] === true || values['sentinels'] !== undefined) {
      throw new CliUsageError('gateway connects to one Redis server (--redis); --cluster and --sentinels are not for it', 'gateway');
    }
    const config = stringOption(values, 'config');
    if (config === undefined || config === '')
      throw new CliUsageError('gateway needs --config <gateway.json>; see docs/gateway.md', 'gateway');
    const frontOnly = values['front-only'] === true;
    const worker = values['worker'] === true;
    const given = wholeNumberOption(values, 'workers', 0, 'gateway');
    if (worker && (frontOnly || given !== undefined || values['stdio'] === true)) {
      throw new CliUsageError('--worker runs one worker and no front: it takes none of --front-only, --workers, --stdio', 'gateway');
    }
    if (frontOnly && given !== undefined && given > 0)
      throw new CliUsageError('--front-only starts no worker processes: leave out --workers', 'gateway');
    const prefix = stringOption(values, 'prefix');
    if (prefix !== undefined && !isValidKeyPrefix(prefix)) {
      throw new CliUsageError(
        `--prefix must be the workers' key prefix (letters, digits and . _ ~ : / - only), got ${JSON.stringify(prefix)}`,
        'gateway',
      );
    }
    return {
      config,
      role: worker ? 'worker' : 'front',
      workers: frontOnly || worker ? 0 : (given ?? 1),
      stdio: values['stdio'] === true,
      redis: stringOption(values, 'redis'),
      prefix,
    };
  },
  run: gatewayCommand,
};
