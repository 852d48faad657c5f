/**
 * A gateway config that cannot work stops the gateway before anything
 * listens or connects, with `options.invalid` naming the field and what it
 * must be; `tool-receipts gateway` prints that one sentence and exits 2. A
 * config the upstream contradicts (a tool setting for a tool it does not
 * list) stops a real start the same way, naming the tool.
 */
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli } from '../../src/cli/cli.js';
import { InvalidOptionsError } from '../../src/core/options.js';
import { parseGatewayConfig } from '../../src/gateway/config.js';
import { Capture } from '../cli/support.js';
import { journalPath } from '../mcp/support.js';
import { useRedis } from '../support/redis-fixture.js';
import { fixtureUpstream, fixtureGateway, startGateway, writeConfig } from './support.js';

const fixture = useRedis();
const UPSTREAM = { command: 'node', args: ['server.js'] };

/** The sentence a config is refused with. */
function refusal(config: unknown, env: Record<string, string> = {}): string {
  try {
    parseGatewayConfig(config, { source: 'gateway.json', env });
  } catch (error) {
    expect(error).toBeInstanceOf(InvalidOptionsError);
    return (error as Error).message;
  }
  throw new Error('the config was accepted');
}

describe('a gateway config', () => {
  it('fills in its defaults: loopback, one tenant, approval for destructive tools, a lone upstream unprefixed', () => {
    const config = parseGatewayConfig({ upstreams: { mail: UPSTREAM }, http: {} }, { baseDir: '/srv/gw' });
    expect(config.http).toMatchObject({ host: '127.0.0.1', port: 8790, path: '/mcp', tokens: [], tenant: 'local', allowedOrigins: [] });
    expect(config.approval).toBe('destructive');
    expect(config.approvals).toEqual({ elicit: false, waitMs: 50_000, timeoutMs: undefined });
    expect(config.upstreams).toEqual([
      expect.objectContaining({
        name: 'mail',
        namePrefix: '',
        transport: { kind: 'stdio', command: 'node', args: ['server.js'], env: {}, cwd: '/srv/gw' },
      }),
    ]);
    const two = parseGatewayConfig(
      { upstreams: { mail: UPSTREAM, crm: { url: 'https://crm.internal/mcp', headers: { authorization: { env: 'CRM' } } } } },
      { env: { CRM: 'Bearer s3cret' } },
    );
    expect(two.upstreams.map((u) => u.namePrefix)).toEqual(['mail_', 'crm_']);
    expect(two.upstreams[1]!.transport).toEqual({
      kind: 'http',
      url: 'https://crm.internal/mcp',
      headers: { authorization: 'Bearer s3cret' },
    });
  });

  it('is refused, naming the field, for every way it cannot work', () => {
    const cases: Array<[unknown, RegExp, Record<string, string>?]> = [
      [[], /the options must be an object/],
      [{}, /`upstreams` must be an object naming each upstream MCP server; got undefined/],
      [{ upstreams: {} }, /`upstreams` must be an object naming at least one upstream/],
      [{ upstreams: { mail: UPSTREAM }, upstream: {} }, /unknown option `upstream`; did you mean `upstreams`\?/],
      [{ upstreams: { 'mail server': UPSTREAM } }, /upstream name "mail server" must be 1 to 32 letters/],
      [{ upstreams: { mail: {} } }, /needs either `command` .* or `url` .*, not neither/],
      [{ upstreams: { mail: { ...UPSTREAM, url: 'http://x/mcp' } } }, /not both/],
      [{ upstreams: { mail: { url: 'ftp://x/mcp' } } }, /`upstreams.mail.url` must be an http:\/\/ or https:\/\/ URL/],
      [{ upstreams: { mail: { url: 'http://x/mcp', cwd: '.' } } }, /`upstreams.mail.cwd` is for a spawned server/],
      [
        { upstreams: { mail: { ...UPSTREAM, tools: { send: { effect: 'risky' } } } } },
        /`upstreams.mail.tools.send.effect` must be "read-only" or/,
      ],
      [{ upstreams: { mail: { ...UPSTREAM, tools: { send: { aproval: true } } } } }, /did you mean `approval`\?/],
      [
        { upstreams: { a: { ...UPSTREAM, prefix: 'x_' }, b: { ...UPSTREAM, prefix: 'x_' } } },
        /both list their tools under the prefix "x_"/,
      ],
      [{ upstreams: { mail: UPSTREAM }, http: { host: '0.0.0.0' } }, /beyond the loopback interface, so the gateway needs bearer tokens/],
      [
        { upstreams: { mail: UPSTREAM }, http: { tokens: [{ tenant: 'acme', token: 'short' }] } },
        /`http.tokens\[0\].token` must be at least 16 characters/,
      ],
      [
        { upstreams: { mail: UPSTREAM }, http: { tokens: [{ tenant: 'acme', token: { env: 'NOPE' } }] } },
        /reads the environment variable NOPE, which is not set/,
      ],
      [
        {
          upstreams: { mail: UPSTREAM },
          http: {
            tokens: [
              { tenant: 'a', token: 'same-token-0123456789' },
              { tenant: 'b', token: 'same-token-0123456789' },
            ],
          },
        },
        /names one token twice/,
      ],
      [
        { upstreams: { mail: UPSTREAM }, http: { tokens: [{ tenant: '', token: 'a-token-0123456789' }] } },
        /`http.tokens\[0\].tenant` must be a tenant name/,
      ],
      [
        { upstreams: { mail: UPSTREAM }, http: { allowedOrigins: ['http://localhost:6274/app'] } },
        /`http.allowedOrigins\[0\]` must be an origin/,
      ],
      [{ upstreams: { mail: UPSTREAM }, http: { allowedHosts: ['*.example.com'] } }, /an allowed host must be a host name/],
      [
        { upstreams: { mail: UPSTREAM }, limits: [{ name: 'mails', per: 'tenant', max: 0, windowMs: 1000 }] },
        /`limits\[0\].max` must be a whole number/,
      ],
      [{ upstreams: { mail: UPSTREAM }, maxRequestBytes: 10 }, /`maxRequestBytes` must be a whole number of bytes, from 1024/],
      [{ upstreams: { mail: UPSTREAM }, queue: { name: 'a:b' } }, /`queue.name` must be a queue name without ":"/],
    ];
    for (const [config, expected] of cases) expect(refusal(config), JSON.stringify(config)).toMatch(expected);
    expect(refusal({ upstreams: {} })).toMatch(/^gateway\.json: /);
  });

  it('stops `tool-receipts gateway` with one sentence and exit 2 when the file is missing, not JSON, or refused', async () => {
    const bad = join(tmpdir(), `gateway-bad-${process.pid}.json`);
    writeFileSync(bad, '{ "upstreams": ');
    const refused = writeConfig({ upstreams: { mail: UPSTREAM }, http: { port: 'eighty' } });
    for (const [file, expected] of [
      [join(tmpdir(), 'no-such-gateway.json'), /the gateway config could not be read \(ENOENT/],
      [bad, /the gateway config is not JSON/],
      [refused, /`http.port` must be a whole number of a port, from 0 to 65535; got "eighty"/],
    ] as const) {
      const out = new Capture();
      const err = new Capture();
      const code = await runCli(['gateway', '--config', file], { stdout: out, stderr: err, env: { REDIS_URL: 'redis://127.0.0.1:1' } });
      expect(code).toBe(2);
      expect(err.text).toMatch(expected);
      expect(err.text.trim().split('\n')).toHaveLength(1);
      expect(out.text).toBe('');
    }
    const usage = new Capture();
    expect(
      await runCli(['gateway', '--config', refused, '--worker', '--workers', '2'], { stdout: new Capture(), stderr: usage, env: {} }),
    ).toBe(2);
    expect(usage.text).toMatch(/--worker runs one worker and no front/);
  });

  it('stops a real start, naming the tool, when a tool setting names a tool the upstream does not list', async () => {
    const journal = journalPath();
    const { config } = fixtureGateway({
      upstreams: { mail: { ...fixtureUpstream(journal), tools: { send_fax: { approval: true } } } },
      http: { port: 0 },
    });
    const refused = await startGateway(config, ['--front-only'], fixture.handle().url).catch((error: unknown) => error);
    // A refused config: exit 2 and the one sentence naming the field, as every other.
    expect(String(refused)).toMatch(/exited \(2\)/);
    expect(String(refused)).toMatch(/`upstreams\.mail\.tools` names "send_fax", which the upstream does not list; it lists "/);
  }, 60_000);

  it('starts a worker whose tool setting names a tool the upstream no longer lists: it runs the tools listed', async () => {
    const journal = journalPath();
    const { config } = fixtureGateway({
      upstreams: { mail: { ...fixtureUpstream(journal), tools: { send_fax: { approval: true } } } },
    });
    // A worker restarted after its upstream dropped a tool: before, it exited at every start, and every call waited.
    const worker = await startGateway(config, ['--worker'], fixture.handle().url);
    await worker.kill();
  }, 60_000);
});
