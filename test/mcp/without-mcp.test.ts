/**
 * Without `@modelcontextprotocol/sdk` installed every other entry point
 * loads and a job runs: a real process in which every
 * `@modelcontextprotocol/*` import fails to resolve.
 */
import { describe, expect, it } from 'vitest';
import { useRedis } from '../support/redis-fixture.js';
import { runWithoutPeer } from '../support/without-peer.js';

const fixture = useRedis();

describe('without @modelcontextprotocol/sdk', () => {
  it('every entry point but /mcp loads and a job runs; only the mcp entry point needs the package (and /openai-agents, through its framework)', async () => {
    const report = await runWithoutPeer({
      hidden: '@modelcontextprotocol/',
      // /openai-agents needs @openai/agents, which has the MCP SDK as a dependency of its own.
      optionalEntry: 'mcp,openai-agents',
      redisUrl: fixture.handle().url,
      prefix: `${fixture.handle().prefix}nomcp`,
    });
    expect(report.loaded).toEqual(report.entries.filter((e) => e !== 'mcp/index' && e !== 'openai-agents/index'));
    expect(report.loaded).toEqual(
      expect.arrayContaining(['index', 'core/index', 'redis/index', 'client/index', 'otel/index', 'console/index']),
    );
    expect(report.result).toEqual({
      results: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'hi', outcome: 'executed' }],
    });
    // The hook really hides the package: the mcp entry point cannot load.
    expect(report.optionalImport).toBe('ERR_MODULE_NOT_FOUND');
  });
});
