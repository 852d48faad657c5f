/**
 * Real MCP servers for the MCP tests (test/fixtures/mcp/server.ts) over stdio
 * and Streamable HTTP, the connections the worker uses to reach them, and
 * the server's journal of every tools/call it received.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { McpConnection } from '../../src/mcp/index.js';
import { onProcessEnd } from '../support/cleanup.js';
import { waitUntil } from '../support/redis-fixture.js';
import { runnableScript } from '../support/compiled-scripts.js';

export const SERVER_SCRIPT = fileURLToPath(new URL('../fixtures/mcp/server.ts', import.meta.url));
/** The server of odd tool lists and of servers that never answer (test/fixtures/mcp/odd-server.ts). */
export const ODD_SERVER_SCRIPT = fileURLToPath(new URL('../fixtures/mcp/odd-server.ts', import.meta.url));

/** Which fixture server to run, and what else it is told through its environment. */
export interface FixtureServer {
  readonly script?: string;
  readonly env?: Readonly<Record<string, string>>;
  /** Told the stdio server's pid as soon as it is spawned (before initialize). */
  readonly onSpawn?: (pid: number) => void;
}

/** One line of the server's journal. */
export interface JournalEntry {
  readonly phase: 'received' | 'sent' | 'cancelled';
  readonly tool: string;
  readonly key?: string;
  readonly args?: Record<string, unknown>;
  readonly pid: number;
}

/** A fresh journal path in the temp directory (the server creates the file). */
export const journalPath = () => join(tmpdir(), `mcp-journal-${process.pid}-${randomBytes(4).toString('hex')}.jsonl`);

export function readJournal(path: string): JournalEntry[] {
  let text = '';
  try {
    text = readFileSync(path, 'utf8');
  } catch {
    return [];
  }
  return text
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as JournalEntry);
}

/** Waits until the journal holds an entry that matches, and returns it. */
export async function journaled(path: string, match: (e: JournalEntry) => boolean, timeoutMs = 20_000): Promise<JournalEntry> {
  const entries = await waitUntil(
    () => Promise.resolve(readJournal(path)),
    (all) => all.some(match),
    timeoutMs,
    'a journal entry',
  );
  return entries.find(match)!;
}

/** A client connected to the fixture server over stdio: the SDK spawns it as a child process. */
export async function stdioClient(journal: string, server: FixtureServer = {}): Promise<Client> {
  const client = new Client({ name: 'test-worker', version: '1.0.0' });
  const { script, execArgv } = runnableScript(server.script ?? SERVER_SCRIPT);
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [...execArgv, script, 'stdio'],
    env: { ...(process.env as Record<string, string>), MCP_JOURNAL: journal, ...server.env },
    stderr: 'inherit',
  });
  // Set before connect: the client chains its own close handling onto it. The process is registered as soon as
  // it is spawned, so one that never finishes initialize is killed with the test process too.
  let unregister = () => undefined as void;
  transport.onclose = () => unregister();
  const connected = client.connect(transport);
  const pid = transport.pid;
  if (pid !== null) {
    unregister = onProcessEnd(() => process.kill(pid, 'SIGKILL'));
    server.onSpawn?.(pid);
  }
  await connected;
  return client;
}

/** The fixture server over Streamable HTTP on 127.0.0.1, in its own process. */
export interface HttpServer {
  readonly url: URL;
  readonly port: number;
  readonly child: ChildProcess;
  /** SIGKILL the server process and wait for it to exit. */
  kill(): Promise<void>;
}

/** `http`: stateless, JSON answers; `http-session`: stateful (Mcp-Session-Id), SSE answers, 404 for a session it does not know. */
export type HttpMode = 'http' | 'http-session';

export async function startHttpServer(journal: string, port = 0, mode: HttpMode = 'http', server: FixtureServer = {}): Promise<HttpServer> {
  const { script, execArgv } = runnableScript(server.script ?? SERVER_SCRIPT);
  const child = fork(script, [mode], {
    env: { ...process.env, MCP_JOURNAL: journal, PORT: String(port), ...server.env },
    execArgv: [...execArgv],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const unregister = onProcessEnd(() => child.kill('SIGKILL'));
  child.once('exit', () => unregister());
  const listening = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('the MCP HTTP server did not start within 30 s')), 30_000);
    child.once('message', (m) => (clearTimeout(timer), resolve((m as { port: number }).port)));
    child.once('exit', (code) => (clearTimeout(timer), reject(new Error(`the MCP HTTP server exited with ${code} before listening`))));
  });
  const kill = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.kill('SIGKILL');
    await exited;
  };
  return { url: new URL(`http://127.0.0.1:${listening}/mcp`), port: listening, child, kill };
}

export async function httpClient(url: URL): Promise<Client> {
  const client = new Client({ name: 'test-worker', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(url));
  return client;
}

/** A server reachable over one transport, and a reconnecting connection to it. */
export interface McpTarget {
  readonly journal: string;
  readonly connection: McpConnection;
  /** SIGKILL the server process (stdio: the child the SDK spawned; HTTP: the server). */
  killServer(pid: number): Promise<void>;
  /** Bring the server back after a kill (stdio: the connection spawns a new one itself). */
  restart(): Promise<void>;
  close(): Promise<void>;
}

export type TransportKind = 'stdio' | 'http';

export async function mcpTarget(kind: TransportKind): Promise<McpTarget> {
  const journal = journalPath();
  if (kind === 'stdio') {
    const connection = new McpConnection(() => stdioClient(journal));
    return {
      journal,
      connection,
      killServer: async (pid) => {
        process.kill(pid, 'SIGKILL');
        await waitUntil(
          () => Promise.resolve(alive(pid)),
          (a) => !a,
          10_000,
          'the server to exit',
        );
      },
      restart: async () => undefined,
      close: () => connection.close(),
    };
  }
  let server = await startHttpServer(journal);
  const connection = new McpConnection(() => httpClient(server.url));
  return {
    journal,
    connection,
    killServer: () => server.kill(),
    restart: async () => {
      server = await startHttpServer(journal, server.port);
    },
    close: async () => {
      await connection.close().catch(() => undefined);
      await server.kill();
    },
  };
}

/** Whether a process of this pid is running. */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
