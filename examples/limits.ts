// Limits next to the tools they guard: at most 3 emails per tenant per hour,
// refused past it with a sentence the model reads, and a budget of 1,000
// cents per run that a call over it waits for. Each counted call is counted
// once, at its execution, however often its job is delivered.
import type { Redis } from 'ioredis';
import { z } from 'zod';
import { defineTool, withToolReceipts } from 'bullmq-tool-receipts';
import { defineLimit } from 'bullmq-tool-receipts/limits';

/** 3 emails per tenant per hour; the 4th is refused (`onLimit: 'refuse'`, the default). */
export const emailsPerHour = defineLimit({ name: 'emails', per: 'tenant', max: 3, windowMs: 3_600_000 });

/** 1,000 cents per run per day, each call costing what its arguments say; over it, the job waits for the next day. */
export const spendPerRun = defineLimit<{ cents: number }>({
  name: 'spend',
  per: 'run',
  max: 1_000,
  windowMs: 86_400_000,
  cost: (args) => args.cents,
  tools: ['buy_credits'],
  onLimit: 'wait',
});

/** A worker's processor whose tools are limited: `deliver` sends an email, `charge` spends cents. */
export function limitedProcessor(
  redis: Redis,
  deliver: (to: string) => Promise<void>,
  charge: (cents: number) => Promise<void>,
  prefix?: string,
) {
  const sendEmail = defineTool({
    name: 'send_email',
    input: z.object({ to: z.string() }),
    effect: 'opaque',
    destructive: false,
    limits: [emailsPerHour],
    async execute({ to }) {
      await deliver(to);
      return `sent to ${to}`;
    },
  });
  const buyCredits = defineTool({
    name: 'buy_credits',
    input: z.object({ cents: z.number().int().min(0) }),
    effect: 'opaque',
    async execute({ cents }) {
      await charge(cents);
      return `bought ${cents} cents of credits`;
    },
  });
  return withToolReceipts({ redis, prefix, tools: [sendEmail, buyCredits], limits: [spendPerRun] });
}
