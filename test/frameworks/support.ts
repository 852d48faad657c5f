/**
 * What the framework tests share: a lane (its own Redis prefix and queue)
 * with `crash-worker` processes running the outbox tools under
 * `withToolReceipts`, the `/client` client the framework tools submit
 * through, the same tool definitions on the agent's side (they lend only
 * their names, descriptions, schemas and approval rule there), and reads of
 * what landed.
 */
import { MockLanguageModelV3 } from 'ai/test';
import { defineTool, type AnyToolDefinition } from '../../src/bullmq/index.js';
import { listPendingApprovals } from '../../src/approvals/index.js';
import { createToolCallClient, type ToolCallClient } from '../../src/client/index.js';
import type { FrameworkToolsOptions } from '../../src/frameworks/receipt-call.js';
import { outboxTools, readOutbox } from '../../examples/outbox-tools.js';
import type { WorkerMessage } from '../support/worker-process.js';
import { RETRYING, useLanes, type Lane } from '../bullmq/fixture.js';

/** How long a step of a test may wait for a worker or a framework. */
export const STEP_TIMEOUT_MS = 30_000;

/** The email every scripted model asks for. */
export const EMAIL = { to: 'ops@example.com', subject: 'Printer', body: 'It is on fire.' } as const;

export const reached = (point: string) => (m: WorkerMessage) => m.type === 'reached' && m.point === point;

/** A lane for a framework's tests: worker processes, the client, and the tools as the agent's side sees them. */
export interface FrameworkLane {
  readonly lane: Lane;
  readonly client: ToolCallClient;
  /** `send_email` as defined for the workers (opaque, no reconcile). */
  readonly sendEmail: AnyToolDefinition;
  /** The same tool with the approval rule the workers run it with under `APPROVAL_TOOLS=send_email`. */
  readonly sendEmailApproved: AnyToolDefinition;
  /** Options every framework's tools take, approvals written on this lane's receipts. */
  readonly options: Pick<FrameworkToolsOptions, 'client' | 'tenantId' | 'approvals' | 'timeoutMs'>;
  /** How many emails went out (every effect appends one outbox entry). */
  sent(): Promise<number>;
  /** The calls awaiting approval on this lane. */
  pending(): ReturnType<typeof listPendingApprovals>;
}

export function useFrameworkLanes(): () => Promise<FrameworkLane> {
  const lane = useLanes({ queues: 'redis' });
  return async () => {
    const l = await lane();
    const client = createToolCallClient({ queue: l.queue, queueEvents: l.events, jobOptions: RETRYING });
    const { sendEmail } = outboxTools(l.redis, l.prefix);
    return {
      lane: l,
      client,
      sendEmail,
      sendEmailApproved: defineTool({ ...sendEmail, approval: 'always' }),
      options: {
        client,
        tenantId: 'acme',
        timeoutMs: 45_000,
        approvals: { redis: l.redis, prefix: l.prefix, queue: l.queue, actor: 'ana@example.com' },
      },
      sent: async () => (await readOutbox(l.redis, l.prefix)).filter((e) => e.tool === 'send_email').length,
      pending: () => listPendingApprovals({ redis: l.redis, prefix: l.prefix }),
    };
  };
}

/** Resolves once `check` holds, polling; rejects after `timeoutMs`. */
export async function eventually(check: () => Promise<boolean>, timeoutMs = STEP_TIMEOUT_MS): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > until) throw new Error('the condition never held');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

export const usage = {
  inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 1, text: 1, reasoning: 0 },
};

/**
 * The AI SDK's test model scripted for two steps (the AI SDK's and Mastra's
 * tests both drive their loop with it): asked with no tool result yet it
 * calls send_email (always as call_1); shown the result, it says what it read.
 */
export function scriptedAiSdkModel(): MockLanguageModelV3 {
  return new MockLanguageModelV3({
    doGenerate: async ({ prompt }) => {
      const answer = prompt.flatMap((m) => (m.role === 'tool' ? m.content : [])).find((p) => p.type === 'tool-result');
      if (answer === undefined) {
        return {
          content: [{ type: 'tool-call', toolCallId: 'call_1', toolName: 'send_email', input: JSON.stringify(EMAIL) }],
          finishReason: { unified: 'tool-calls', raw: undefined },
          usage,
          warnings: [],
        };
      }
      const value = (answer.output as { value?: unknown }).value;
      const text = typeof value === 'string' ? value : JSON.stringify(value);
      return { content: [{ type: 'text', text: `read: ${text}` }], finishReason: { unified: 'stop', raw: undefined }, usage, warnings: [] };
    },
  });
}
