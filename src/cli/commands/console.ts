/**
 * `tool-receipts console`: serves the operator console (see `src/console`)
 * until interrupted.
 */
import { parseAllowedHost } from '../../http/hosts.js';
import { startConsoleServer, DEFAULT_CONSOLE_PORT } from '../../console/server.js';
import { receiptsConnection, type RedisConnection } from '../../redis/connection/connection.js';
import { expectPositionals, stringListOption, stringOption, type CommandContext, type CommandSpec } from '../command.js';
import { CliUsageError } from '../errors.js';
import { writeLine } from '../format.js';

/** Arguments of {@link consoleCommand}. */
export interface ConsoleArgs {
  readonly host: string;
  readonly port: number;
  readonly token?: string;
  readonly readToken?: string;
  readonly approverToken?: string;
  readonly queues: readonly string[];
  readonly bullPrefix?: string;
  /** Hosts the console answers for besides loopback (and the address it binds). */
  readonly allowedHosts: readonly string[];
}

/** Environment variables the tokens may come from instead of the command line (which `ps` shows). */
export const CONSOLE_TOKEN_ENV = 'TOOL_RECEIPTS_CONSOLE_TOKEN';
export const CONSOLE_READ_TOKEN_ENV = 'TOOL_RECEIPTS_CONSOLE_READ_TOKEN';
export const CONSOLE_APPROVER_TOKEN_ENV = 'TOOL_RECEIPTS_CONSOLE_APPROVER_TOKEN';

/** What `duplicate` takes on an ioredis `Redis`. */
/** An ioredis connection's copy, with the calls that keep and close it. */
type IoredisCopy = RedisConnection & {
  on(event: 'close' | 'error', listener: () => void): unknown;
  quit(): Promise<unknown>;
  disconnect(): void;
};
type Duplicable = RedisConnection & { duplicate(override: Record<string, unknown>): IoredisCopy };

/**
 * The CLI's connection fails fast and never reconnects, which suits a command
 * that runs once. A server that stays up should ride out a Redis restart: on
 * one server (or through sentinels) the console gets a copy of the connection
 * that reconnects, and a command sent while Redis is away fails at once
 * instead of waiting. A Cluster connection is used as it is.
 */
function lastingConnection(redis: RedisConnection): { connection: RedisConnection; close(): Promise<void> } {
  const candidate = redis as Partial<Duplicable>;
  // node-redis clients reconnect by themselves; a Cluster is used as it is.
  const adapted = receiptsConnection(redis);
  if (adapted.isCluster || adapted.client !== 'ioredis' || typeof candidate.duplicate !== 'function')
    return { connection: redis, close: async () => undefined };
  const copy = (redis as Duplicable).duplicate({
    retryStrategy: (times: number) => Math.min(times * 200, 2_000),
    sentinelRetryStrategy: (times: number) => Math.min(times * 200, 2_000),
    maxRetriesPerRequest: 1,
    enableOfflineQueue: false,
    lazyConnect: false,
  });
  copy.on('close', () => undefined);
  copy.on('error', () => undefined);
  return { connection: copy, close: async () => void (await copy.quit().catch(() => copy.disconnect())) };
}

/** Serves the console until SIGINT or SIGTERM. */
export async function consoleCommand({ store, redis: cliRedis, out, args, env }: CommandContext<ConsoleArgs>): Promise<void> {
  if (cliRedis === undefined) throw new CliUsageError('console needs a Redis connection', 'console');
  const operator = args.token ?? env?.[CONSOLE_TOKEN_ENV];
  const read = args.readToken ?? env?.[CONSOLE_READ_TOKEN_ENV];
  const approver = args.approverToken ?? env?.[CONSOLE_APPROVER_TOKEN_ENV];
  const tokens = { ...(operator ? { operator } : {}), ...(approver ? { approver } : {}), ...(read ? { read } : {}) };
  const lasting = lastingConnection(cliRedis);
  try {
    const server = await startConsoleServer({
      redis: lasting.connection,
      prefix: store.prefix,
      // --retention-ms, as every other command keeps it on the receipts it settles (resolved, denied).
      retentionMs: store.channel.settings.retentionMs,
      host: args.host,
      port: args.port,
      tokens,
      allowedHosts: args.allowedHosts,
      queues: args.queues.map((name) => ({ name, ...(args.bullPrefix ? { prefix: args.bullPrefix } : {}) })),
      source: 'console',
    });
    writeLine(
      out,
      `tool-receipts console on ${server.url} (prefix ${store.prefix}${operator || approver || read ? ', token required' : ', no token: loopback only'}). Stop it with Ctrl-C.`,
    );
    const names = ['localhost', '127.0.0.0/8', '[::1]', ...server.allowedHosts];
    writeLine(out, `It answers for the hosts ${names.join(', ')}; add others with --allowed-host.`);
    await new Promise<void>((resolve) => {
      process.once('SIGINT', () => resolve());
      process.once('SIGTERM', () => resolve());
    });
    await server.close();
  } finally {
    await lasting.close();
  }
}

/** The `console` command. */
export const consoleSpec: CommandSpec<ConsoleArgs> = {
  name: 'console',
  synopsis: 'console',
  summary: 'serve the operator console in the browser',
  help: `Usage: tool-receipts console [--port <n>] [--host <addr>] [--allowed-host <h>]... [--token <t>] [--approver-token <t>] [--read-token <t>] [--queues <a,b>] [connection options]

Serves the operator console: the receipts that need a person, the calls that
need approval, find, a receipt with resolve and job retry, a run's timeline,
bulk resolve by filter, counts, and the audit log. Every write is recorded in the audit log.

Options:
  --port <n>          port (default ${DEFAULT_CONSOLE_PORT})
  --host <addr>       interface to bind (default 127.0.0.1). Any other
                      interface requires a token.
  --allowed-host <h>  a host name (or address, with an optional :port)
                      users reach the console by; repeat for more. It
                      answers only for localhost, 127.0.0.0/8, [::1], the
                      address it binds (for 0.0.0.0 or ::, this machine's
                      addresses) and these; any other Host gets 421.
  --token <t>         the operator token (resolve, retry, bulk, approve,
                      deny); default $${CONSOLE_TOKEN_ENV}. At least 16
                      characters.
  --approver-token <t>
                      an approver token: every page, and approving or
                      denying calls that need approval, nothing else;
                      default $${CONSOLE_APPROVER_TOKEN_ENV}
  --read-token <t>    a read-only token; default $${CONSOLE_READ_TOKEN_ENV}
  --queues <a,b>      BullMQ queues to look job ids up in
  --bull-prefix <p>   their BullMQ prefix (default bull)`,
  options: {
    port: { type: 'string' },
    host: { type: 'string' },
    token: { type: 'string' },
    'approver-token': { type: 'string' },
    'read-token': { type: 'string' },
    queues: { type: 'string' },
    'bull-prefix': { type: 'string' },
    'allowed-host': { type: 'string', multiple: true },
  },
  parse(values, positionals) {
    expectPositionals('console', positionals, []);
    const portText = stringOption(values, 'port') ?? String(DEFAULT_CONSOLE_PORT);
    const port = /^[0-9]{1,5}$/.test(portText) ? Number(portText) : NaN;
    if (!(port >= 0 && port <= 65535)) throw new CliUsageError(`--port must be a port number, got ${JSON.stringify(portText)}`, 'console');
    const host = stringOption(values, 'host') ?? '127.0.0.1';
    if (host === '') throw new CliUsageError('--host needs an address', 'console');
    const token = stringOption(values, 'token');
    const readToken = stringOption(values, 'read-token');
    const approverToken = stringOption(values, 'approver-token');
    const bullPrefix = stringOption(values, 'bull-prefix');
    const queues = (stringOption(values, 'queues') ?? '')
      .split(',')
      .map((q) => q.trim())
      .filter((q) => q !== '');
    const allowedHosts = stringListOption(values, 'allowed-host');
    for (const name of allowedHosts) parseAllowedHost(name, (message) => new CliUsageError(`--allowed-host: ${message}`, 'console'));
    return {
      host,
      port,
      queues,
      allowedHosts,
      ...(token !== undefined ? { token } : {}),
      ...(readToken !== undefined ? { readToken } : {}),
      ...(approverToken !== undefined ? { approverToken } : {}),
      ...(bullPrefix !== undefined ? { bullPrefix } : {}),
    };
  },
  run: consoleCommand,
};
