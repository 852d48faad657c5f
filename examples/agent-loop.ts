/**
 * An agent loop on the client: a scripted fake model (Anthropic Messages
 * format, no network) holds a multi-turn conversation whose tool calls run
 * on a fleet of worker processes. One worker is SIGKILLed in the middle of a
 * call; the turn still completes, no effect lands twice, a retried step
 * attaches to its turn's job, and the resume note a resumed agent would be
 * given is printed at the end.
 *
 *   npm run agent-loop
 *
 * Redis: REDIS_URL if set, else a throwaway redis-server, else it asks you
 * to run `docker compose up -d`.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { Queue, QueueEvents } from 'bullmq';
import { Redis } from 'ioredis';
import {
  anthropicToolCalls,
  anthropicToolResultMessage,
  createToolCallClient,
  submitTurnCalls,
  type AnthropicContentBlock,
  type AnthropicToolResultMessage,
} from '../src/client/index.js';
import { buildResumeJournalNote, journalFromReceipts } from '../src/core/index.js';
import { ReceiptStore } from '../src/redis/index.js';
import { redisForScript } from '../scripts/demo-redis.js';
import { duplicateEffects, providerDeduped, readOutbox } from './outbox-tools.js';

const WORKERS = 3;
const TENANT = 'acme';
const workerScript = fileURLToPath(new URL('../scripts/demo-worker.ts', import.meta.url));

type Block = AnthropicContentBlock & Record<string, unknown>;
type Message = { role: 'user' | 'assistant'; content: string | Block[] } | AnthropicToolResultMessage;

/**
 * The scripted model: it reads the conversation so far and answers as a
 * model would, with text and tool_use blocks. Turn 1 opens a ticket and
 * emails the facilities team; turn 2 tells the reporter the ticket's id,
 * read from turn 1's result; then it is done.
 */
function fakeModel(messages: Message[]): Message {
  const turns = messages.filter((m) => m.role === 'assistant').length;
  if (turns === 0) {
    return {
      role: 'assistant',
      content: [
        { type: 'text', text: 'I will open a ticket and alert facilities.' },
        {
          type: 'tool_use',
          id: 'toolu_ticket',
          name: 'create_ticket',
          input: { title: 'Printer on fire, 3rd floor', assignee: 'facilities' },
        },
        {
          type: 'tool_use',
          id: 'toolu_alert',
          name: 'send_email',
          input: { to: 'facilities@example.com', subject: 'Printer on fire, 3rd floor' },
        },
      ],
    };
  }
  if (turns === 1) {
    const results = messages.at(-1) as AnthropicToolResultMessage;
    const ticket = JSON.parse(results.content.find((b) => b.tool_use_id === 'toolu_ticket')!.content) as { ticket: string };
    return {
      role: 'assistant',
      content: [
        {
          type: 'tool_use',
          id: 'toolu_reply',
          name: 'send_email',
          input: { to: 'dana@example.com', subject: `Your ticket ${ticket.ticket} is open` },
        },
      ],
    };
  }
  return { role: 'assistant', content: [{ type: 'text', text: 'Ticket opened, facilities alerted, and you have the ticket number.' }] };
}

const fleet = new Set<ChildProcess>();
let onMidCall: (message: { tool: string; part: string; pid: number; attempt: number }, worker: ChildProcess) => void = () => undefined;

function spawnWorker(env: NodeJS.ProcessEnv): Promise<ChildProcess> {
  const child = fork(workerScript, [], { env, execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  fleet.add(child);
  child.once('exit', () => fleet.delete(child));
  return new Promise((resolve, reject) => {
    child.on('message', (m: { type: string; tool: string; part: string; pid: number; attempt: number }) => {
      if (m.type === 'ready') resolve(child);
      if (m.type === 'mid-call') onMidCall(m, child);
    });
    child.once('exit', (code) => reject(new Error(`worker exited early (code ${code})`)));
  });
}

const show = (label: string, value: unknown) =>
  console.log(`  ${label.padEnd(10)} ${typeof value === 'string' ? value : JSON.stringify(value)}`);

async function main(): Promise<void> {
  const redisServer = await redisForScript('agent-loop');
  const prefix = `agent${randomBytes(3).toString('hex')}`;
  const runId = `run-${randomBytes(3).toString('hex')}`;
  const env = {
    ...process.env,
    REDIS_URL: redisServer.url,
    DEMO_PREFIX: prefix,
    DEMO_QUEUE: 'tool-calls',
    DEMO_LEASE_MS: '1500',
    DEMO_EFFECT_MS: '150',
    DEMO_FREEZE_ONCE_AT: 'create_ticket:create',
  };
  const redis = new Redis(redisServer.url, { maxRetriesPerRequest: null });
  const queue = new Queue('tool-calls', { connection: redis, prefix });
  const queueEvents = new QueueEvents('tool-calls', { connection: redis.duplicate(), prefix });
  const client = createToolCallClient({ queue, queueEvents, timeoutMs: 60_000 });

  console.log(`Starting ${WORKERS} worker processes ...`);
  await Promise.all(Array.from({ length: WORKERS }, () => spawnWorker(env)));
  let killed = 0;
  onMidCall = (m, worker) => {
    console.log(`  !! worker ${m.pid} is inside ${m.tool} (the "${m.part}" step landed, not yet recorded): SIGKILL`);
    worker.kill('SIGKILL');
    killed++;
    void spawnWorker(env).then((w) => console.log(`  !! started worker ${w.pid} in its place; BullMQ hands it the stalled job`));
  };

  const messages: Message[] = [{ role: 'user', content: 'The printer on the 3rd floor is on fire. I am Dana (dana@example.com).' }];
  console.log(`\nuser: ${messages[0]!.content as string}`);
  let firstTurn: { turnId: string; calls: ReturnType<typeof anthropicToolCalls> } | undefined;
  for (let turnNo = 1; ; turnNo++) {
    const reply = fakeModel(messages);
    messages.push(reply);
    const calls = anthropicToolCalls(reply);
    for (const block of reply.content as readonly Block[]) if (block.type === 'text') console.log(`\nassistant: ${String(block.text)}`);
    if (calls.entries.length === 0) break;
    const turnId = `turn-${turnNo}`;
    firstTurn ??= { turnId, calls };
    console.log(
      `\nturn ${turnNo}: submitting ${calls.entries.length} tool call(s) as job ${client.jobIdOf({ tenantId: TENANT, runId, turnId })}`,
    );
    for (const entry of calls.entries) if (entry.kind === 'call') show('call', `${entry.call.name} ${JSON.stringify(entry.call.input)}`);
    const results = await submitTurnCalls(client, calls, { tenantId: TENANT, runId, turnId });
    for (const r of results) show(r.outcome, `${r.tool_use_id}: ${r.content}`);
    messages.push(anthropicToolResultMessage(calls, results));
  }

  // An agent process that crashed after turn 1 and retried its step submits turn 1 again.
  const retried = await submitTurnCalls(client, firstTurn!.calls, { tenantId: TENANT, runId, turnId: firstTurn!.turnId });
  console.log(
    `\nRetrying turn 1 (as a restarted agent would) attached to its job: ${retried.map((r) => r.tool_use_id).join(', ')} answered, nothing ran again.`,
  );

  const outbox = await readOutbox(redis, prefix);
  const jobs = await queue.getJobs(['completed', 'failed', 'active', 'waiting', 'delayed']);
  console.log('');
  for (const [label, value] of [
    ['turns', messages.filter((m) => m.role === 'assistant').length],
    ['jobs (one per turn with tool calls)', jobs.length],
    ['workers SIGKILLed mid-call', killed],
    ['effects in the outbox', outbox.length],
    ['repeats absorbed by the ticket provider', Object.values(await providerDeduped(redis, prefix)).reduce((a, b) => a + b, 0)],
    ['DUPLICATE EFFECTS', duplicateEffects(outbox).length],
  ] as const) {
    console.log(`  ${label.padEnd(42)} ${value}`);
  }

  const store = new ReceiptStore({ redis, prefix });
  const note = buildResumeJournalNote(journalFromReceipts(await store.listRun(TENANT, runId)));
  console.log('\nIf this agent were resumed now (say its process died), it would be given this note:\n');
  console.log(note ?? '(nothing to resume)');
  if (process.env.REDIS_URL) {
    console.log(`\nEverything this run wrote is under the prefix ${prefix}; remove it with:`);
    console.log(`  redis-cli --scan --pattern '${prefix}:*' | xargs -r redis-cli unlink`);
  }

  for (const w of fleet) w.kill('SIGKILL');
  await queueEvents.close();
  await queue.close();
  redis.disconnect();
  await redisServer.stop();
  process.exit(duplicateEffects(outbox).length === 0 && killed === 1 ? 0 : 1);
}

main().catch((err) => {
  console.error(err);
  for (const w of fleet) w.kill('SIGKILL');
  process.exit(1);
});
