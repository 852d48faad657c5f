/**
 * An MCP tool's result as the model reads it, before capping and offload.
 */
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';

/**
 * What the model reads for an MCP tool's result (before capping and
 * offload). A result of text blocks alone is their text, joined by blank
 * lines, as the model would read it from any tool. Anything else (images,
 * audio, embedded resources, resource links, or `structuredContent`) is kept
 * whole, in MCP's own shapes, as `{ content, structuredContent }` JSON: no
 * block is dropped or rewritten, and a large one (an image's base64 data)
 * goes to the offload store like any large result. Pass `renderResult` to
 * `mcpTools` for another rendering.
 */
export function mcpResultForModel(result: CallToolResult): unknown {
  const content = Array.isArray(result.content) ? result.content : [];
  const allText = content.every((block) => block.type === 'text');
  if (allText && result.structuredContent === undefined) return content.map((block) => (block as { text: string }).text).join('\n\n');
  return result.structuredContent === undefined ? { content } : { content, structuredContent: result.structuredContent };
}
