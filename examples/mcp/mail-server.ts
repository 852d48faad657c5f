/**
 * A small MCP server with a fake mail tool that counts what it sends, written
 * with the MCP SDK as any team would write one. Over stdio (the default) or
 * Streamable HTTP on 127.0.0.1:
 *
 *   npx tsx examples/mcp/mail-server.ts            # stdio
 *   npx tsx examples/mcp/mail-server.ts http 3333  # http://127.0.0.1:3333/mcp
 *
 * `send_mail` reads the idempotency key bullmq-tool-receipts puts in the
 * request's `_meta` and sends each key at most once, as a provider that
 * deduplicates would; `find_mail` looks a key up (for a reconcile);
 * `mail_count` says how many mails were really sent.
 */
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { z } from 'zod';

/** The `_meta` key the worker sends (MCP_IDEMPOTENCY_KEY_META in bullmq-tool-receipts/mcp). */
const IDEMPOTENCY_KEY = 'bullmq-tool-receipts/idempotency-key';

/** The outbox: every mail really sent, by idempotency key. Shared by every session of this process. */
const sent = new Map<string, { id: string; to: string; subject: string }>();

function mailServer(): McpServer {
  const server = new McpServer({ name: 'fake-mail', version: '1.0.0' });
  server.registerTool(
    'send_mail',
    {
      description: 'Send an email.',
      inputSchema: { to: z.email(), subject: z.string().min(1), body: z.string() },
      // Sending is not idempotent and changes the world, but deletes nothing.
      annotations: { destructiveHint: false, idempotentHint: false, openWorldHint: true },
    },
    async ({ to, subject }, extra) => {
      const key = extra._meta?.[IDEMPOTENCY_KEY];
      const earlier = typeof key === 'string' ? sent.get(key) : undefined;
      const mail = earlier ?? { id: `mail_${randomUUID().slice(0, 8)}`, to, subject };
      if (!earlier) sent.set(typeof key === 'string' ? key : mail.id, mail);
      return { content: [{ type: 'text', text: `${earlier ? 'already sent' : 'sent'} ${mail.id} to ${to}` }] };
    },
  );
  server.registerTool(
    'find_mail',
    {
      description: 'Look up the mail sent with an idempotency key.',
      inputSchema: { key: z.string() },
      annotations: { readOnlyHint: true },
    },
    async ({ key }) => {
      const mail = sent.get(key);
      return { content: [{ type: 'text', text: mail ? JSON.stringify(mail) : 'none' }] };
    },
  );
  server.registerTool(
    'mail_count',
    { description: 'How many mails were sent.', inputSchema: {}, annotations: { readOnlyHint: true } },
    async () => ({ content: [{ type: 'text', text: String(sent.size) }] }),
  );
  return server;
}

const [mode = 'stdio', port = '3333'] = process.argv.slice(2);
if (mode === 'stdio') {
  await mailServer().connect(new StdioServerTransport());
} else if (mode === 'http') {
  // Stateless Streamable HTTP: a server and transport per request.
  const http = createServer(async (req, res) => {
    const server = mailServer();
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    res.on('close', () => void transport.close().then(() => server.close()));
    await server.connect(transport);
    await transport.handleRequest(req, res);
  });
  http.listen(Number(port), '127.0.0.1', () => console.error(`fake-mail MCP server on http://127.0.0.1:${port}/mcp`));
} else {
  throw new Error(`usage: mail-server.ts [stdio | http <port>] (got ${mode})`);
}
