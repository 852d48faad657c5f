/**
 * The `tool-receipts` command line: finds the command, parses its options
 * with `node:util` `parseArgs`, connects to Redis, runs the command, and turns
 * every expected failure into one sentence on stderr and an exit code.
 *
 * Exit codes: 0 done; 1 refused, not found, or Redis unreachable; 2 bad
 * command line. Only an unexpected error (a bug) prints a stack trace.
 */
import { readFileSync } from 'node:fs';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { maskedUrl, ToolReceiptsError } from '../core/errors.js';
import { MalformedNameError } from '../core/identity.js';
import { DEFAULT_KEY_PREFIX, InvalidKeyPrefixError, isValidKeyPrefix } from '../redis/keys.js';
import { closestName, InvalidOptionsError } from '../core/options.js';
import { DEFAULT_RETENTION_MS, ReceiptStore } from '../redis/receipts/store.js';
import { stringOption, wholeNumberOption, type CommandSpec, type OptionValues } from './command.js';
import { ambiguousSpec } from './commands/ambiguous.js';
import { approvalsSpec, approveSpec, denySpec } from './commands/approvals.js';
import { auditSpec } from './commands/audit.js';
import { consoleSpec } from './commands/console.js';
import { doctorSpec } from './commands/doctor.js';
import { gatewaySpec } from './commands/gateway.js';
import { migrateSpec } from './commands/migrate.js';
import { resolveSpec } from './commands/resolve.js';
import { runSpec } from './commands/run.js';
import { showSpec } from './commands/show.js';
import { statsSpec } from './commands/stats.js';
import { limitsSpec } from './commands/limits.js';
import { CliUsageError, InvalidReceiptKeyError } from './errors.js';
import { checkedUrl, cliConnection, DEFAULT_REDIS_URL, type CliConnection, type Target } from './connect.js';
import { terminalText, writeLine, type Output } from './format.js';

export { DEFAULT_REDIS_URL } from './connect.js';

/** Every command, by name. */
export const COMMANDS: ReadonlyMap<string, CommandSpec<unknown>> = new Map(
  (
    [
      ambiguousSpec,
      statsSpec,
      runSpec,
      showSpec,
      resolveSpec,
      approvalsSpec,
      approveSpec,
      denySpec,
      doctorSpec,
      consoleSpec,
      gatewaySpec,
      auditSpec,
      limitsSpec,
      migrateSpec,
    ] as CommandSpec<never>[]
  ).map((spec) => [spec.name, spec as unknown as CommandSpec<unknown>]),
);

const CONNECTION_OPTIONS = {
  redis: { type: 'string' },
  cluster: { type: 'boolean' },
  sentinels: { type: 'string' },
  name: { type: 'string' },
  prefix: { type: 'string' },
  'retention-ms': { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const satisfies NonNullable<ParseArgsConfig['options']>;

/** Options that take a value (the connection's and every command's), so the word after them is not the command. */
const VALUE_OPTIONS = new Set(
  [CONNECTION_OPTIONS, ...[...COMMANDS.values()].map((spec) => spec.options)].flatMap((options) =>
    Object.entries(options).flatMap(([name, option]) => (option.type === 'string' ? [`--${name}`] : [])),
  ),
);

const CONNECTION_HELP = `Connection options (any command, before or after it):
  --redis <url>          Redis URL; default $REDIS_URL, else ${DEFAULT_REDIS_URL}
  --cluster              the URL names one node of a Redis Cluster; commands
                         that search (ambiguous) then walk every master
  --sentinels <h:p,...>  find the master through these Redis Sentinels
  --name <master>        the master's name in the sentinels (with --sentinels);
                         credentials still come from the --redis URL
  --prefix <p>           key prefix the workers' stores use; default ${DEFAULT_KEY_PREFIX}
  --retention-ms <ms>    how long a resolved receipt is kept; use the workers'
                         retentionMs (default ${DEFAULT_RETENTION_MS}, 24 h)
  -h, --help             help for the command`;

function mainHelp(): string {
  const width = Math.max(...[...COMMANDS.values()].map((c) => c.synopsis.length));
  const list = [...COMMANDS.values()].map((c) => `  ${c.synopsis.padEnd(width)}  ${c.summary}`).join('\n');
  return `tool-receipts: inspect and settle the tool-call receipts that bullmq-tool-receipts keeps in Redis.

Usage: tool-receipts <command> [options]

Commands:
${list}

${CONNECTION_HELP}
  --version              print the version

Run tool-receipts <command> --help for a command's own options.
Exit codes: 0 done; 1 refused, not found, or Redis unreachable; 2 bad command line.`;
}

function version(): string {
  try {
    const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version?: unknown };
    return typeof pkg.version === 'string' ? pkg.version : 'unknown';
  } catch {
    return 'unknown';
  }
}

/** What {@link runCli} reads and writes, so tests can run it in process. */
export interface CliIo {
  readonly stdout: Output;
  readonly stderr: Output;
  /** Environment to read `REDIS_URL` from. */
  readonly env: Readonly<Record<string, string | undefined>>;
}

/** Splits argv into the command word and everything else (options may come before or after it). */
function splitCommand(argv: readonly string[]): { name: string | undefined; rest: string[] } {
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string;
    if (arg === '--') break;
    if (VALUE_OPTIONS.has(arg)) {
      i += 1;
      continue;
    }
    if (arg.startsWith('-')) continue;
    return { name: arg, rest: [...argv.slice(0, i), ...argv.slice(i + 1)] };
  }
  return { name: undefined, rest: [...argv] };
}

function parseCommandLine(spec: CommandSpec<unknown>, rest: readonly string[]): { values: OptionValues; positionals: string[] } {
  try {
    const { values, positionals } = parseArgs({
      args: [...rest],
      options: { ...CONNECTION_OPTIONS, ...spec.options },
      allowPositionals: true,
      strict: true,
    });
    return { values: values as OptionValues, positionals };
  } catch (err) {
    const code = (err as { code?: unknown }).code;
    const message = err instanceof Error ? err.message : String(err);
    if (code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION') {
      const option = /'([^']+)'/.exec(message)?.[1] ?? 'an option';
      const known = Object.keys({ ...CONNECTION_OPTIONS, ...spec.options, help: true });
      const meant = option.startsWith('--') ? closestName(option.slice(2), known) : undefined;
      const hint = meant === undefined ? '' : ` (did you mean --${meant}?)`;
      throw new CliUsageError(`${spec.name} has no option ${option}${hint}; see tool-receipts ${spec.name} --help`, spec.name);
    }
    if (typeof code === 'string' && code.startsWith('ERR_PARSE_ARGS')) {
      throw new CliUsageError(`${message.replace(/\.$/, '')}; see tool-receipts ${spec.name} --help`, spec.name);
    }
    throw err;
  }
}

/** The sentence for a command word no command has, naming the one closest to it (as a mistyped option gets). */
function unknownCommand(name: string): string {
  const meant = closestName(name, [...COMMANDS.keys()]);
  return `unknown command ${JSON.stringify(name)}${meant === undefined ? '' : ` (did you mean ${meant}?)`}`;
}

function prefixOption(values: OptionValues): string {
  const prefix = stringOption(values, 'prefix');
  if (prefix === undefined) return DEFAULT_KEY_PREFIX;
  if (!isValidKeyPrefix(prefix)) {
    throw new CliUsageError(
      `--prefix must be the workers' key prefix (letters, digits and . _ ~ : / - only), got ${JSON.stringify(prefix)}`,
    );
  }
  return prefix;
}

function sentinelTarget(values: OptionValues): Target['sentinel'] {
  const list = stringOption(values, 'sentinels');
  const name = stringOption(values, 'name');
  if (list === undefined && name === undefined) return undefined;
  if (list === undefined || name === undefined || name === '') {
    throw new CliUsageError('--sentinels and --name go together: --sentinels host:port[,host:port…] --name <master name>');
  }
  if (values['cluster'] === true) throw new CliUsageError('--cluster and --sentinels exclude each other: a Cluster has no sentinels');
  const sentinels = list.split(',').map((entry) => {
    const match = /^([^\s:,]+|\[[0-9a-fA-F:]+\]):([0-9]{1,5})$/.exec(entry.trim());
    const port = Number(match?.[2]);
    if (!match || port < 1 || port > 65535)
      throw new CliUsageError(`--sentinels takes host:port entries separated by commas, got ${JSON.stringify(entry)}`);
    return { host: match[1]!.replace(/^\[|\]$/g, ''), port };
  });
  return { sentinels, name };
}

/** Exit code for an error the CLI expected. */
function exitCodeOf(err: ToolReceiptsError): number {
  const usage =
    err instanceof CliUsageError ||
    err instanceof InvalidReceiptKeyError ||
    err instanceof InvalidKeyPrefixError ||
    err instanceof MalformedNameError ||
    err instanceof InvalidOptionsError; // an option built from a flag
  return usage ? 2 : 1;
}

function isConnectionLoss(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  const code = (err as { code?: unknown }).code;
  return (
    (typeof code === 'string' && /^(ECONNREFUSED|ECONNRESET|ETIMEDOUT|EPIPE|ENOTFOUND|EHOSTUNREACH)$/.test(code)) ||
    /Connection is closed|Stream isn't writeable/.test(err.message)
  );
}

function report(io: CliIo, json: boolean, code: string, message: string): void {
  if (json) {
    writeLine(io.stderr, JSON.stringify({ error: { code, message } }));
  } else {
    writeLine(io.stderr, `tool-receipts: ${terminalText(message).replace(/\n/g, ' ')}`);
  }
}

/**
 * Runs the CLI on `argv` (without the node and script paths) and resolves to
 * the exit code. Never throws: expected errors become one sentence on stderr
 * (or `{"error":{code,message}}` with `--json`), unexpected ones a message and
 * stack trace with exit code 1.
 */
export async function runCli(argv: readonly string[], io: CliIo): Promise<number> {
  const { name, rest } = splitCommand(argv);
  let json = argv.includes('--json');
  let connection: CliConnection | undefined;
  try {
    if (name === undefined || name === 'help') {
      if (rest.includes('--version')) {
        writeLine(io.stdout, version());
        return 0;
      }
      const topic = name === 'help' ? splitCommand(rest).name : undefined;
      const spec = topic === undefined ? undefined : COMMANDS.get(topic);
      if (topic !== undefined && spec === undefined) throw new CliUsageError(unknownCommand(topic));
      const asked = name === 'help' || rest.includes('--help') || rest.includes('-h');
      writeLine(asked ? io.stdout : io.stderr, spec?.help ?? mainHelp());
      if (spec) writeLine(io.stdout, `\n${CONNECTION_HELP}`);
      return asked ? 0 : 2;
    }
    const spec = COMMANDS.get(name);
    if (spec === undefined) {
      throw new CliUsageError(`${unknownCommand(name)}; the commands are ${[...COMMANDS.keys()].join(', ')} (see tool-receipts --help)`);
    }
    const { values, positionals } = parseCommandLine(spec, rest);
    json = values['json'] === true;
    if (values['help'] === true) {
      writeLine(io.stdout, `${spec.help}\n\n${CONNECTION_HELP}`);
      return 0;
    }
    const args = spec.parse(values, positionals);
    if (spec.redis === false) return (await spec.run({ out: io.stdout, args, env: io.env })) ?? 0;
    const url = checkedUrl((typeof values['redis'] === 'string' ? values['redis'] : undefined) ?? io.env['REDIS_URL'] ?? DEFAULT_REDIS_URL);
    const prefix = prefixOption(values);
    const retentionMs = wholeNumberOption(values, 'retention-ms', 1) ?? DEFAULT_RETENTION_MS;
    const sentinel = sentinelTarget(values);
    connection = await cliConnection({ url, cluster: values['cluster'] === true, ...(sentinel ? { sentinel } : {}) }, io.env);
    const { redis } = connection;
    await connection.open(
      sentinel ? `sentinels ${sentinel.sentinels.map((s) => `${s.host}:${s.port}`).join(',')} (master ${sentinel.name})` : maskedUrl(url),
    );
    // Made once the connection is open: a store refuses a node-redis client that is not.
    const store = new ReceiptStore({ redis, prefix, retentionMs });
    const code = await spec.run({ store, redis, out: io.stdout, args, env: io.env });
    return code ?? 0;
  } catch (err) {
    if (err instanceof ToolReceiptsError) {
      report(io, json, err.code, err.message);
      return exitCodeOf(err);
    }
    if (err instanceof Error && err.name === 'ReplyError') {
      report(io, json, 'cli.redis_error', `Redis refused a command: ${err.message}`);
      return 1;
    }
    if (isConnectionLoss(err)) {
      report(io, json, 'cli.redis_unavailable', `lost the connection to Redis: ${(err as Error).message}`);
      return 1;
    }
    const text = err instanceof Error ? (err.stack ?? err.message) : String(err);
    report(io, false, 'cli.unexpected', 'unexpected error, please report it:');
    writeLine(io.stderr, text);
    return 1;
  } finally {
    await connection?.close();
  }
}
