/**
 * Without any agent framework installed (`ai`, `@openai/agents`,
 * `@mastra/core`, `@langchain/*`) the package loads and runs a job: a real
 * process in which every import of them fails to resolve. Only the four
 * framework subpaths need them.
 */
import { describe, expect, it } from 'vitest';
import { useRedis } from '../support/redis-fixture.js';
import { runWithoutPeer } from '../support/without-peer.js';

const fixture = useRedis();
const FRAMEWORK_ENTRIES = ['ai-sdk', 'openai-agents', 'mastra', 'langgraph'];

describe('without any agent framework', () => {
  it('the root entry and every other subpath load and run a job; each framework subpath fails to resolve its framework', async () => {
    const report = await runWithoutPeer({
      hidden: 'ai,@openai/agents,@mastra/,@langchain/',
      optionalEntry: FRAMEWORK_ENTRIES.join(','),
      redisUrl: fixture.handle().url,
      prefix: `${fixture.handle().prefix}noframeworks`,
    });
    expect(report.entries).toEqual(expect.arrayContaining(FRAMEWORK_ENTRIES.map((entry) => `${entry}/index`)));
    expect(report.loaded).toEqual(report.entries.filter((e) => !FRAMEWORK_ENTRIES.includes(e.replace(/\/index$/, ''))));
    expect(report.loaded).toEqual(expect.arrayContaining(['index', 'client/index', 'approvals/index', 'mcp/index', 'otel/index']));
    expect(report.result).toEqual({
      results: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'hi', outcome: 'executed' }],
    });
    // The hook really hides them: each framework subpath cannot load.
    expect(report.optionalImports).toEqual(Object.fromEntries(FRAMEWORK_ENTRIES.map((entry) => [entry, 'ERR_MODULE_NOT_FOUND'])));
  });
});
