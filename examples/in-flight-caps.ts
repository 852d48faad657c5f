// In-flight caps: a tenant's agent that fans out twenty `browse` calls takes
// at most 3 browser sessions at once, the rest waiting in line and run in
// arrival order as sessions end; and a provider that allows 2 parallel
// requests per account sees at most 2, a third refused with a sentence.
import type { Redis } from 'ioredis';
import { z } from 'zod';
import { defineTool, withToolReceipts } from 'bullmq-tool-receipts';
import { defineLimit } from 'bullmq-tool-receipts/limits';

/** At most 3 `browse` calls of one tenant in flight at once; the others wait for a slot, in arrival order. */
export const browsing = defineLimit({ name: 'browsing', per: 'tenant', concurrency: 3, tools: ['browse'], onLimit: 'wait' });

/** At most 2 requests in flight to the provider for the whole fleet; a third is refused (`onLimit: 'refuse'`, the default). */
export const providerRequests = defineLimit({ name: 'provider-requests', per: 'global', concurrency: 2 });

/** A worker's processor whose `browse` drives a browser session and `transcribe` calls the provider. */
export function cappedProcessor(
  redis: Redis,
  open: (url: string) => Promise<string>,
  transcribe: (audioUrl: string) => Promise<string>,
  prefix?: string,
) {
  const browse = defineTool({
    name: 'browse',
    input: z.object({ url: z.string() }),
    effect: 'opaque',
    destructive: false,
    execute: ({ url }) => open(url),
  });
  const transcribeTool = defineTool({
    name: 'transcribe',
    input: z.object({ audioUrl: z.string() }),
    effect: 'opaque',
    destructive: false,
    limits: [providerRequests],
    execute: ({ audioUrl }) => transcribe(audioUrl),
  });
  return withToolReceipts({ redis, prefix, tools: [browse, transcribeTool], limits: [browsing] });
}
