// Limits that mirror a provider's own, so its 429s never come: a search API
// that allows 10 requests in any minute (a sliding window: no minute ever
// sees 11, across the turn of the minute too), and a model API that allows a
// burst of 5 and then one call every 2 s (a token bucket: 30 a minute, at
// most 5 at once), which a call over it waits for.
import type { Redis } from 'ioredis';
import { z } from 'zod';
import { defineTool, withToolReceipts } from 'bullmq-tool-receipts';
import { defineLimit } from 'bullmq-tool-receipts/limits';

/** At most 10 searches per tenant in any 60 s; the 11th is refused with when it may run. */
export const searchesPerMinute = defineLimit({ name: 'searches', per: 'tenant', max: 10, windowMs: 60_000, kind: 'sliding' });

/** 30 completions a minute for the whole fleet, one every 2 s, up to 5 at once; a call over it waits. */
export const completions = defineLimit({
  name: 'completions',
  per: 'global',
  max: 30,
  windowMs: 60_000,
  kind: 'bucket',
  burst: 5,
  onLimit: 'wait',
});

/** A worker's processor whose tools call the providers: `search` and `complete` are their clients. */
export function providerLimitedProcessor(
  redis: Redis,
  search: (query: string) => Promise<string>,
  complete: (prompt: string) => Promise<string>,
  prefix?: string,
) {
  const webSearch = defineTool({
    name: 'web_search',
    input: z.object({ query: z.string() }),
    effect: 'opaque',
    idempotent: true,
    limits: [searchesPerMinute],
    execute: ({ query }) => search(query),
  });
  const summarize = defineTool({
    name: 'summarize',
    input: z.object({ text: z.string() }),
    effect: 'opaque',
    idempotent: true,
    limits: [completions],
    execute: ({ text }) => complete(`Summarize: ${text}`),
  });
  return withToolReceipts({ redis, prefix, tools: [webSearch, summarize] });
}
