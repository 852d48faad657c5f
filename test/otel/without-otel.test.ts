/**
 * Without `@opentelemetry/api` installed the package loads and runs a job:
 * a real process in which every `@opentelemetry/*` import fails to resolve.
 */
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { useRedis } from '../support/redis-fixture.js';

const fixture = useRedis();
const dir = new URL('../fixtures/no-otel/', import.meta.url);

describe('without @opentelemetry/api', () => {
  it('the main entry loads and runs a job; only the otel entry point needs the package', async () => {
    const child = fork(fileURLToPath(new URL('app.ts', dir)), [], {
      env: { ...process.env, REDIS_URL: fixture.handle().url, PREFIX: `${fixture.handle().prefix}nootel` },
      execArgv: ['--import', fileURLToPath(new URL('register.mjs', dir)), '--import', 'tsx'],
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    const report = await new Promise<{ result: unknown; otelImport: string }>((resolve, reject) => {
      child.once('message', (m) => resolve(m as { result: unknown; otelImport: string }));
      child.once('exit', (code) => reject(new Error(`app exited with ${code} before reporting`)));
    });
    expect(report.result).toEqual({
      results: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'hi', outcome: 'executed' }],
    });
    // The hook really hides the package: the otel entry point cannot load.
    expect(report.otelImport).toBe('ERR_MODULE_NOT_FOUND');
    await new Promise((resolve) => (child.exitCode !== null ? resolve(undefined) : child.once('exit', resolve)));
  });
});
