import { z } from 'zod';
import type { AssistantMessage, ContentBlock, ToolSchemas, ToolUseBlock } from '../../src/repair/index.js';

export function toolUse(id: string, name: string, input: unknown): ToolUseBlock {
  return { type: 'tool_use', id, name, input };
}

export function text(value: string): ContentBlock {
  return { type: 'text', text: value };
}

export function message(...content: ContentBlock[]): AssistantMessage {
  return { role: 'assistant', content };
}

export const searchSchema = z.object({
  query: z.string(),
  filters: z.object({ lang: z.string(), year: z.number().optional() }).optional(),
  tags: z.array(z.string()).default([]),
  limit: z.number().int().optional(),
});

export const fetchSchema = z.object({
  baseUrl: z.string(),
  headers: z.record(z.string(), z.string()).optional(),
  timeoutMs: z.number().default(1000),
});

export const deleteSchema = z.object({
  path: z.string(),
  options: z.object({ recursive: z.boolean() }).optional(),
});

export const tools: ToolSchemas = new Map<string, z.ZodType | null>([
  ['search', searchSchema],
  ['fetch', fetchSchema],
  ['delete_file', deleteSchema],
  ['free_form', null],
]);
