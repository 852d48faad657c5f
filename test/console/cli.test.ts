/**
 * The console's CLI side: `tool-receipts console` served for real, the
 * binding rule, and `tool-receipts audit`, which shows the CLI's own resolves
 * next to the console's.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { runCli } from '../../src/cli/cli.js';
import type { OptionValues } from '../../src/cli/command.js';
import type { AuditEntry } from '../../src/redis/operators/audit-log.js';
import { freshKey, useRedis } from '../support/redis-fixture.js';
import { startRedis } from '../support/redis.js';
import { onProcessEnd } from '../support/cleanup.js';
import { Capture, makeAmbiguous } from '../cli/support.js';
import { cookieOf, send } from './support-http.js';
import { Redis } from 'ioredis';
import { ReceiptStore } from '../../src/redis/receipts/store.js';

const fixture = useRedis();
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const TOKEN = 'cli-operator-token-0123456789';
const APPROVER = 'cli-approver-token-0123456789';
const WEEK_MS = 7 * 86_400_000;

async function cli(argv: string[], env: Record<string, string> = {}) {
  const stdout = new Capture();
  const stderr = new Capture();
  const code = await runCli(argv, { stdout, stderr, env: { REDIS_URL: fixture.handle().url, ...env } });
  return { code, stdout: stdout.text, stderr: stderr.text };
}

describe('tool-receipts audit', () => {
  it("records the CLI's resolve and prints it, newest first, as a table and as JSON", async () => {
    const prefix = `${fixture.handle().prefix}audit`;
    const store = fixture.store({ prefix });
    const key = freshKey();
    await makeAmbiguous(store, key);
    const redisKey = store.redisKey(key);
    const empty = await cli(['audit', '--prefix', prefix]);
    expect(empty).toMatchObject({ code: 0, stdout: `No audit entries under prefix ${prefix}.\n` });

    const resolved = await cli([
      'resolve',
      redisKey,
      '--prefix',
      prefix,
      '--attempts',
      '1',
      '--failed',
      '--error',
      'bounced, never delivered',
      '--by',
      'oncall',
    ]);
    expect(resolved.code).toBe(0);
    const json = await cli(['audit', '--prefix', prefix, '--json']);
    const entries = JSON.parse(json.stdout) as AuditEntry[];
    expect(entries).toHaveLength(1);
    expect(entries[0]).toMatchObject({
      source: 'cli',
      action: 'resolve',
      receipts: [redisKey],
      detail: { outcome: 'failed', attemptsSeen: 1, error: 'bounced, never delivered' },
    });
    expect(entries[0]!.actor).toBe('oncall');

    // A refused resolve writes nothing, and records nothing.
    const refused = await cli(['resolve', redisKey, '--prefix', prefix, '--attempts', '1', '--completed']);
    expect(refused.code).toBe(1);
    const text = await cli(['audit', '--prefix', prefix]);
    expect(text.code).toBe(0);
    const lines = text.stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^WHEN\s+WHO\s+FROM\s+WHAT\s+RECEIPTS\s+DETAIL$/);
    expect(lines).toHaveLength(2);
    expect(lines[1]).toContain('cli');
    expect(lines[1]).toContain(redisKey);
    expect(lines[1]).toContain('outcome=failed');
  });

  it('refuses a bad --count', async () => {
    const bad = await cli(['audit', '--count', 'lots']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--count must be a whole number');
  });
});

describe('tool-receipts console', () => {
  it('refuses to bind beyond loopback without a token, and a token too short to be one', async () => {
    const open = await cli(['console', '--host', '0.0.0.0', '--port', '0', '--prefix', fixture.handle().prefix]);
    expect(open.code).toBe(1);
    expect(open.stderr).toContain('needs a token');
    const short = await cli(['console', '--port', '0', '--token', 'abc', '--prefix', fixture.handle().prefix]);
    expect(short.code).toBe(1);
    expect(short.stderr).toContain('at least 16 characters');
    for (const bad of ['http://ops.example', '*.example.com', 'ops.example.', '']) {
      const refused = await cli(['console', '--port', '0', '--allowed-host', bad, '--prefix', fixture.handle().prefix]);
      expect({ bad, code: refused.code }).toEqual({ bad, code: 2 });
      expect(refused.stderr).toContain('--allowed-host: an allowed host must be a host name');
    }
  });

  it('reads --allowed-host before or after the command, repeated', async () => {
    const { consoleSpec } = await import('../../src/cli/commands/console.js');
    const { parseArgs } = await import('node:util');
    const { values } = parseArgs({
      args: ['--allowed-host', 'ops.example', '--allowed-host', '10.0.0.5:8787'],
      options: consoleSpec.options,
      strict: true,
    });
    expect(consoleSpec.parse(values as OptionValues, [])).toMatchObject({ allowedHosts: ['ops.example', '10.0.0.5:8787'] });
    // Before the command name, its value is not taken for the command.
    const before = await cli(['--allowed-host', 'ops.example', 'console', '--port', 'x']);
    expect(before.stderr).toContain('--port must be a port number');
  });

  it('serves the console with the token from the environment, rides out a Redis restart, and stops on SIGTERM', async () => {
    // A server of its own, restarted under the console.
    const own = await startRedis();
    const ownRedis = new Redis(own.url);
    const ownStore = new ReceiptStore({ redis: ownRedis, prefix: own.prefix });
    const key = freshKey();
    await makeAmbiguous(ownStore, key);
    const child = spawn(
      process.execPath,
      [
        '--import',
        'tsx',
        'src/cli/main.ts',
        'console',
        '--port',
        '0',
        '--allowed-host',
        'ops.example',
        '--allowed-host',
        'pinned.example:9',
        '--prefix',
        own.prefix,
        '--retention-ms',
        String(WEEK_MS),
      ],
      {
        cwd: ROOT,
        env: { ...process.env, REDIS_URL: own.url, TOOL_RECEIPTS_CONSOLE_TOKEN: TOKEN, TOOL_RECEIPTS_CONSOLE_APPROVER_TOKEN: APPROVER },
        stdio: ['ignore', 'pipe', 'inherit'],
      },
    );
    const unregister = onProcessEnd(() => child.kill('SIGKILL'));
    try {
      let out = '';
      const url = await new Promise<string>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no URL printed: ${out}`)), 30_000);
        child.stdout.on('data', (chunk: Buffer) => {
          out += chunk.toString();
          const match = /on (http:\/\/\S+\/) /.exec(out);
          if (match) {
            clearTimeout(timer);
            resolve(match[1]!);
          }
        });
      });
      expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/$/);
      expect((await fetch(url)).status).toBe(401);
      await new Promise<void>((resolve) => (out.includes('add others') ? resolve() : child.stdout.once('data', () => resolve())));
      expect(out).toContain(
        'It answers for the hosts localhost, 127.0.0.0/8, [::1], ops.example, pinned.example:9; add others with --allowed-host.',
      );
      const port = Number(new URL(url).port);
      const bearer = { authorization: `Bearer ${TOKEN}` };
      expect((await send(port, '/counts', { headers: { ...bearer, host: `ops.example:${port}` } })).status).toBe(200);
      expect((await send(port, '/counts', { headers: { ...bearer, host: 'pinned.example:9' } })).status).toBe(200);
      expect((await send(port, '/counts', { headers: { ...bearer, host: `pinned.example:${port}` } })).status).toBe(421);
      expect((await send(port, '/counts', { headers: { ...bearer, host: `rebind.example:${port}` } })).status).toBe(421);
      const ok = await fetch(`${url}counts`, { headers: { Authorization: `Bearer ${TOKEN}` } });
      expect(ok.status).toBe(200);
      expect(await ok.text()).toContain('Counts');
      // The approver token from the environment: it signs in as an approver.
      const approvals = await fetch(`${url}approvals`, { headers: { Authorization: `Bearer ${APPROVER}` } });
      expect(approvals.status).toBe(200);
      expect(await approvals.text()).toMatch(/· approver<\/span>[\s\S]*Nothing to decide\./);
      // A resolve in this console keeps the receipt as long as --retention-ms says, as the CLI's own resolve does.
      const page = await send(port, '/', { headers: bearer });
      const resolved = await send(port, '/receipt/resolve', {
        method: 'POST',
        headers: { ...bearer, cookie: cookieOf(page) },
        body: new URLSearchParams({
          key: ownStore.redisKey(key),
          attempts: '1',
          epoch: (await ownStore.inspect(key))!.epoch,
          outcome: 'failed',
          error: 'bounced',
          csrf: /trc_console_csrf=([^;]+)/.exec(cookieOf(page))![1]!,
        }).toString(),
      });
      expect(resolved.status).toBe(303);
      expect(await ownStore.inspect(key)).toMatchObject({ status: 'failed' });
      expect(await ownRedis.pttl(ownStore.redisKey(key))).toBeGreaterThan(WEEK_MS - 3_600_000);
      await own.restart();
      const deadline = Date.now() + 20_000;
      let again = await fetch(`${url}counts`, { headers: { Authorization: `Bearer ${TOKEN}` } });
      while (again.status !== 200 && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 200));
        again = await fetch(`${url}counts`, { headers: { Authorization: `Bearer ${TOKEN}` } });
      }
      expect(again.status).toBe(200);
      const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
      child.kill('SIGTERM');
      expect(await exited).toBe(0);
    } finally {
      unregister();
      child.kill('SIGKILL');
      ownRedis.disconnect();
      await own.stop();
    }
  });
});
