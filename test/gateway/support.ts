/**
 * The gateway for real in its tests: `tool-receipts gateway` processes (a
 * front, worker processes) started from the CLI's entry point, a config file
 * fronting the MCP fixture server (test/fixtures/mcp/server.ts, spawned over
 * stdio by each gateway process, journaling every call it receives), and MCP
 * SDK clients talking to the front over Streamable HTTP.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult, ClientCapabilities } from '@modelcontextprotocol/sdk/types.js';
import { onProcessEnd } from '../support/cleanup.js';
import { journalPath, SERVER_SCRIPT } from '../mcp/support.js';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));
export const CLI_MAIN = fileURLToPath(new URL('../../src/cli/main.ts', import.meta.url));

/**
 * Lease and lock timings short enough that a killed worker's call is taken up
 * in a few seconds, and long enough that a live worker on a loaded machine
 * keeps them: a BullMQ lock lost by a worker that merely stalled aborts its
 * call, which then reads as unknown, where a test expects its result.
 */
export const FAST_WORKER = { leaseMs: 1000, lockDurationMs: 3000, stalledIntervalMs: 1000 } as const;

/** The fixture server as a stdio upstream, journaling to `journal`. */
export function fixtureUpstream(journal: string): Record<string, unknown> {
  return { command: process.execPath, args: ['--import', 'tsx', SERVER_SCRIPT, 'stdio'], env: { MCP_JOURNAL: journal }, cwd: ROOT };
}

/** Writes a gateway config to a fresh file in the temp directory and returns its path. */
export function writeConfig(config: unknown): string {
  const file = join(tmpdir(), `gateway-${process.pid}-${randomBytes(4).toString('hex')}.json`);
  writeFileSync(file, JSON.stringify(config, null, 2));
  return file;
}

/** Every process {@link startGateway} started, from its spawn until it exits. */
const running = new Set<ChildProcess>();

/** SIGKILLs every gateway process still running, ready or still starting, and waits until each has exited. */
export async function killGateways(): Promise<void> {
  await Promise.all(
    [...running].map(
      (child) =>
        new Promise<void>((resolve) => {
          if (child.exitCode !== null || child.signalCode !== null) return resolve();
          child.once('exit', () => resolve());
          child.kill('SIGKILL');
        }),
    ),
  );
}

/** A gateway process. */
export interface GatewayProcess {
  /** The front's endpoint (fronts only). */
  readonly url: string | undefined;
  /** SIGKILL, and wait until it has exited. */
  kill(): Promise<void>;
}

/** The line a gateway process prints once it is ready: the front with its URL, or a worker. */
const READY = /^tool-receipts gateway (?:on (\S+):|worker on queue )/m;

/**
 * Starts `tool-receipts gateway --config <file> ...args` and waits for it to
 * say it is ready (the front names its URL). Rejects with its output when it
 * exits first.
 */
export async function startGateway(
  configFile: string,
  args: readonly string[],
  redisUrl: string,
  env: Record<string, string> = {},
): Promise<GatewayProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', CLI_MAIN, 'gateway', '--config', configFile, ...args], {
    cwd: ROOT,
    env: { ...process.env, REDIS_URL: redisUrl, LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const unregister = onProcessEnd(() => child.kill('SIGKILL'));
  running.add(child);
  child.once('exit', () => {
    unregister();
    running.delete(child);
  });
  let output = '';
  let stdout = '';
  const url = await new Promise<string | undefined>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the gateway did not get ready within 60 s:\n${output}`)), 60_000);
    child.stdout!.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      stdout += chunk.toString();
      const ready = READY.exec(stdout);
      if (ready === null) return;
      clearTimeout(timer);
      resolve(ready[1]);
    });
    child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`the gateway exited (${code ?? signal}) before it was ready:\n${output}`));
    });
  });
  const exited = new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve();
    else child.once('exit', () => resolve());
  });
  const kill = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await exited;
  };
  return { url, kill };
}

/** An MCP client of the front, with a bearer token when given. */
export async function gatewayClient(
  url: string,
  options: { token?: string; capabilities?: ClientCapabilities; name?: string } = {},
): Promise<{ client: Client; transport: StreamableHTTPClientTransport }> {
  const client = new Client({ name: options.name ?? 'gateway-test', version: '1.0.0' }, { capabilities: options.capabilities ?? {} });
  const headers: Record<string, string> = options.token === undefined ? {} : { Authorization: `Bearer ${options.token}` };
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers },
    // A front that was killed comes back within seconds: the client's own stream reconnects quickly and often.
    reconnectionOptions: { initialReconnectionDelay: 200, maxReconnectionDelay: 1000, reconnectionDelayGrowFactor: 1.5, maxRetries: 50 },
  });
  await client.connect(transport);
  return { client, transport };
}

/** The text of a result's first block. */
export const textOf = (result: object): string =>
  ((result as CallToolResult).content as Array<{ text?: string }> | undefined)?.[0]?.text ?? '';

/** The outcome the gateway put in a result's `_meta`. */
export const outcomeOf = (result: object): unknown => (result as CallToolResult)._meta?.['bullmq-tool-receipts/outcome'];

/** A gateway of its own for a test: a fresh journal, receipts prefix and queue, and its config file. */
export interface FixtureGateway {
  readonly journal: string;
  readonly prefix: string;
  readonly queue: string;
  readonly config: string;
}

/**
 * Writes a config fronting the fixture server as the upstream `mail` (stdio,
 * journaling to a fresh file), and any `more` upstreams, under a prefix and
 * queue no other test shares, with fast worker timings; `settings` adds to
 * it or replaces its keys.
 */
export function fixtureGateway(settings: Record<string, unknown> = {}, more: Record<string, unknown> = {}): FixtureGateway {
  const id = randomBytes(4).toString('hex');
  const journal = journalPath();
  const prefix = `gw${id}`;
  const queue = `gateway-${id}`;
  const upstreams = { mail: fixtureUpstream(journal), ...more };
  const config = writeConfig({ prefix, queue: { name: queue }, upstreams, worker: FAST_WORKER, ...settings });
  return { journal, prefix, queue, config };
}
