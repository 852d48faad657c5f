/**
 * Without `@modelcontextprotocol/sdk` installed every other entry point
 * loads and a job runs: a real process in which every
 * `@modelcontextprotocol/*` import fails to resolve.
 */
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { useRedis } from '../support/redis-fixture.js';

const fixture = useRedis();
const dir = new URL('../fixtures/no-mcp/', import.meta.url);

describe('without @modelcontextprotocol/sdk', () => {
  it('every entry point but /mcp loads and a job runs; only the mcp entry point needs the package', async () => {
    const child = fork(fileURLToPath(new URL('app.ts', dir)), [], {
      env: { ...process.env, REDIS_URL: fixture.handle().url, PREFIX: `${fixture.handle().prefix}nomcp` },
      execArgv: ['--import', fileURLToPath(new URL('register.mjs', dir)), '--import', 'tsx'],
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    const report = await new Promise<{ result: unknown; loaded: string[]; mcpImport: string }>((resolve, reject) => {
      child.once('message', (m) => resolve(m as { result: unknown; loaded: string[]; mcpImport: string }));
      child.once('exit', (code) => reject(new Error(`app exited with ${code} before reporting`)));
    });
    expect(report.loaded).toEqual(['index', 'core/index', 'redis/index', 'offload/index', 'repair/index', 'client/index', 'otel/index', 'testing/index']);
    expect(report.result).toEqual({
      results: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'hi', outcome: 'executed' }],
    });
    // The hook really hides the package: the mcp entry point cannot load.
    expect(report.mcpImport).toBe('ERR_MODULE_NOT_FOUND');
    await new Promise((resolve) => (child.exitCode !== null ? resolve(undefined) : child.once('exit', resolve)));
  });
});
