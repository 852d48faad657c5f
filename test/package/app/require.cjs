// CommonJS: every entry loads with require(), and the required processor runs
// a call on the real Redis (through the /testing job stand-in): executed, then replayed.
const root = require('bullmq-tool-receipts');
// Every subpath of the exports map, so an entry added later is loaded too.
const { existsSync } = require('node:fs');
const path = require('node:path');
const { exports: exportsMap } = require('bullmq-tool-receipts/package.json');
// A framework's subpath needs that framework, an optional peer: in an app without it, requiring the
// subpath must fail as a missing module, and is reported under `absent` with the error's code.
const FRAMEWORK_PEERS = { 'ai-sdk': 'ai', 'openai-agents': '@openai/agents', mastra: '@mastra/core', langgraph: '@langchain/langgraph' };
const installed = (name) => existsSync(path.join(process.cwd(), 'node_modules', name, 'package.json'));
const absent = {};
const entries = {};
for (const subpath of Object.keys(exportsMap).filter((s) => s !== '.' && s !== './package.json')) {
  const name = subpath.slice(2);
  const peer = FRAMEWORK_PEERS[name];
  if (peer !== undefined && !installed(peer)) {
    try {
      require(`bullmq-tool-receipts/${name}`);
      absent[name] = 'loaded';
    } catch (error) {
      absent[name] = error.code;
    }
    continue;
  }
  entries[name] = require(`bullmq-tool-receipts/${name}`);
}
const { Redis } = require('ioredis');
const { z } = require('zod');

async function main() {
  const sent = [];
  const tool = root.defineTool({
    name: 'create_ticket',
    input: z.object({ title: z.string() }),
    effect: 'resumable',
    destructive: false,
    async execute(args, ctx) {
      return ctx.step('create', () => {
        sent.push(args.title);
        return { id: `T-${sent.length}` };
      });
    },
  });
  const redis = new Redis(process.env.REDIS_URL);
  const processor = root.withToolReceipts({ redis, prefix: process.env.RECEIPTS_PREFIX, tools: [tool] });
  const data = { tenantId: 'acme', runId: 'run-cjs', calls: [{ id: 'toolu_9', name: 'create_ticket', input: { title: 'printer' } }] };
  const outcomes = [];
  for (let i = 0; i < 2; i++) {
    const result = await processor(entries.testing.testJob(data).job, 'token');
    outcomes.push(...result.results.map((block) => block.outcome));
  }
  let refused;
  try {
    root.hmacSha256Digest(undefined);
  } catch (error) {
    refused = error instanceof root.ToolReceiptsError ? error.code : String(error);
  }
  const exported = Object.fromEntries(Object.entries(entries).map(([name, mod]) => [name, Object.keys(mod).length]));
  console.log(`RESULT ${JSON.stringify({ outcomes, sent, refused, exported, absent })}`);
  await redis.quit();
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
