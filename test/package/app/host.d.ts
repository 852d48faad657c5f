// What the README's examples assume the host app already has.
declare const mailer: {
  send(
    args: { to: string; subject: string; body: string },
    options: { idempotencyKey: string; signal: AbortSignal },
  ): Promise<{ messageId: string }>;
};
declare const tickets: { create(title: string): Promise<string> };
declare const chat: { post(text: string): Promise<void> };
declare const sendEmail: import('bullmq-tool-receipts').AnyToolDefinition;
