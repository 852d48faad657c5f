/**
 * Without `@opentelemetry/api` installed the package loads and runs a job:
 * a real process in which every `@opentelemetry/*` import fails to resolve.
 */
import { describe, expect, it } from 'vitest';
import { useRedis } from '../support/redis-fixture.js';
import { runWithoutPeer } from '../support/without-peer.js';

const fixture = useRedis();

describe('without @opentelemetry/api', () => {
  it('every other entry point loads and runs a job; only the otel entry point needs the package (and /ai-sdk, through its framework)', async () => {
    const report = await runWithoutPeer({
      hidden: '@opentelemetry/',
      // /ai-sdk needs `ai`, which has @opentelemetry/api as a dependency of its own.
      optionalEntry: 'otel,ai-sdk',
      redisUrl: fixture.handle().url,
      prefix: `${fixture.handle().prefix}nootel`,
    });
    expect(report.loaded).toEqual(report.entries.filter((e) => e !== 'otel/index' && e !== 'ai-sdk/index'));
    expect(report.loaded).toContain('index');
    expect(report.result).toEqual({
      results: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'hi', outcome: 'executed' }],
    });
    // The hook really hides the package: the otel entry point cannot load.
    expect(report.optionalImport).toBe('ERR_MODULE_NOT_FOUND');
  });
});
