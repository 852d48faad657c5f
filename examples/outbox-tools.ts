/**
 * Two tools with real, countable side effects, used by the demo and the
 * crash tests: every effect appends one entry to an "outbox" Redis list, so a
 * duplicate effect is visible as two entries with the same idempotency key.
 */
import type { Redis } from 'ioredis';
import { z } from 'zod';
import { defineTool, type ToolContext } from '../src/bullmq/index.js';

/** One landed side effect. */
export interface OutboxEntry {
  tool: string;
  /** Which part of the effect: `send` for an email, a step name for a ticket. */
  part: string;
  idempotencyKey: string;
  callId: string;
  attempt: number;
  pid: number;
}

/** Points where a test or the demo may interfere with a running call. */
export interface OutboxHooks {
  /** After the receipt was claimed, before any effect. */
  beforeEffect?(tool: string, ctx: ToolContext): Promise<void> | void;
  /** After an effect (or a ticket step) landed, before the call returns. */
  afterEffect?(tool: string, part: string, ctx: ToolContext): Promise<void> | void;
}

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    const t = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => (clearTimeout(t), reject(signal.reason)), { once: true });
  });

/**
 * A fake provider's write. The email provider has no deduplication: every
 * request lands. The ticket provider honours idempotency keys, as real
 * ticketing and payment APIs do, so a step repeated after a crash between its
 * effect and its record is absorbed (and counted) instead of landing twice.
 * Every landed effect is also indexed by tool, part and idempotency key, so a
 * reconcile can look it up as it would ask a real provider.
 * KEYS: outbox list, provider's seen-keys hash, deduped counts by part, landed index.
 * ARGV: entry, dedupe key or '', part, landed-index field.
 */
const LAND = `
if ARGV[2] ~= '' and redis.call('HSETNX', KEYS[2], ARGV[2], 1) == 0 then
  return redis.call('HINCRBY', KEYS[3], ARGV[3], 1) * 0
end
redis.call('HSET', KEYS[4], ARGV[4], ARGV[1])
return redis.call('RPUSH', KEYS[1], ARGV[1])`;

const landedKey = (prefix: string) => `${prefix}:demo:landed`;
const landedField = (tool: string, part: string, idempotencyKey: string) => `${tool}|${part}|${idempotencyKey}`;

/** Whether an effect with this idempotency key landed: what a reconcile asks the provider. */
export async function effectLanded(redis: Redis, prefix: string, tool: string, part: string, idempotencyKey: string): Promise<boolean> {
  return (await redis.hexists(landedKey(prefix), landedField(tool, part, idempotencyKey))) === 1;
}

/** The Redis list a prefix's outbox lives in. */
export const outboxKey = (prefix: string) => `${prefix}:demo:outbox`;

/** Read and parse every outbox entry. */
export async function readOutbox(redis: Redis, prefix: string): Promise<OutboxEntry[]> {
  return (await redis.lrange(outboxKey(prefix), 0, -1)).map((s) => JSON.parse(s) as OutboxEntry);
}

/** Requests the ticket provider absorbed because it had seen their idempotency key, by part. */
export async function providerDeduped(redis: Redis, prefix: string): Promise<Record<string, number>> {
  const raw = await redis.hgetall(`${prefix}:demo:provider-deduped`);
  return Object.fromEntries(Object.entries(raw).map(([part, n]) => [part, Number(n)]));
}

/** Effects that landed more than once: entries sharing (tool, part, idempotency key). */
export function duplicateEffects(entries: readonly OutboxEntry[]): OutboxEntry[][] {
  const groups = new Map<string, OutboxEntry[]>();
  for (const e of entries) {
    const k = `${e.tool}\u0000${e.part}\u0000${e.idempotencyKey}`;
    groups.set(k, [...(groups.get(k) ?? []), e]);
  }
  return [...groups.values()].filter((g) => g.length > 1);
}

/** Options of {@link outboxTools}. */
export interface OutboxToolOptions {
  /** How long each effect takes, in ms. Default 30. */
  effectMs?: number;
  hooks?: OutboxHooks;
  /** Give send_email a reconcile that looks the email up in the outbox by idempotency key. */
  reconcileEmail?: boolean;
  /** The charge provider's deduplication window, in ms (charge_card's keyWindowMs). Default 24 h. */
  chargeKeyWindowMs?: number;
}

/**
 * `send_email` (opaque: one indivisible effect), `create_ticket` (resumable:
 * three recorded steps) and `charge_card` (keyed: its provider deduplicates
 * on the idempotency key), all writing to the outbox.
 */
export function outboxTools(redis: Redis, prefix: string, options: OutboxToolOptions = {}) {
  const effectMs = options.effectMs ?? 30;
  const hooks = options.hooks ?? {};
  const land = async (tool: string, part: string, ctx: ToolContext, honoursIdempotencyKey: boolean) => {
    const entry: OutboxEntry = {
      tool,
      part,
      idempotencyKey: ctx.idempotencyKey,
      callId: ctx.callId,
      attempt: ctx.attempt,
      pid: process.pid,
    };
    const keys = [outboxKey(prefix), `${prefix}:demo:provider-seen`, `${prefix}:demo:provider-deduped`, landedKey(prefix)];
    const dedupeKey = honoursIdempotencyKey ? `${ctx.idempotencyKey}|${part}` : '';
    await redis.eval(LAND, 4, ...keys, JSON.stringify(entry), dedupeKey, part, landedField(tool, part, ctx.idempotencyKey));
    await hooks.afterEffect?.(tool, part, ctx);
  };

  const sendEmail = defineTool({
    name: 'send_email',
    description: 'Send an email.',
    input: z.object({ to: z.string().email(), subject: z.string(), body: z.string().default('') }),
    effect: 'opaque',
    destructive: false,
    async execute(args, ctx) {
      await hooks.beforeEffect?.('send_email', ctx);
      await sleep(effectMs, ctx.signal);
      await land('send_email', 'send', ctx, false);
      return { sent: true, to: args.to };
    },
    // The provider can be asked whether a message with this key went out. A process that was
    // SIGKILLed can send nothing afterwards, so "not in the outbox" means it never will be.
    ...(options.reconcileEmail
      ? {
          async reconcile(args: { to: string }, ctx: { idempotencyKey: string }) {
            return (await effectLanded(redis, prefix, 'send_email', 'send', ctx.idempotencyKey))
              ? { status: 'completed' as const, result: { sent: true, to: args.to } }
              : { status: 'not_started' as const };
          },
        }
      : {}),
  });

  const chargeCard = defineTool({
    name: 'charge_card',
    description: 'Charge a card through a payment provider that deduplicates on the idempotency key.',
    input: z.object({ customer: z.string(), cents: z.number().int().positive() }),
    effect: 'keyed',
    keyWindowMs: options.chargeKeyWindowMs ?? 86_400_000,
    destructive: false,
    async execute(args, ctx) {
      await hooks.beforeEffect?.('charge_card', ctx);
      await sleep(effectMs, ctx.signal);
      await land('charge_card', 'charge', ctx, true);
      return { charged: args.cents, customer: args.customer };
    },
  });

  const createTicket = defineTool({
    name: 'create_ticket',
    description: 'Open a support ticket and notify its assignee.',
    input: z.object({ title: z.string().min(1), assignee: z.string().optional() }),
    effect: 'resumable',
    destructive: false,
    async execute(args, ctx) {
      await hooks.beforeEffect?.('create_ticket', ctx);
      const id = await ctx.step('reserve', async () => {
        await sleep(effectMs / 3, ctx.signal);
        await land('create_ticket', 'reserve', ctx, true);
        return `T-${ctx.idempotencyKey.slice(4, 12)}`;
      });
      await ctx.step('create', async () => {
        await sleep(effectMs / 3, ctx.signal);
        await land('create_ticket', 'create', ctx, true);
        return true;
      });
      await ctx.step('notify', async () => {
        await sleep(effectMs / 3, ctx.signal);
        await land('create_ticket', 'notify', ctx, true);
        return args.assignee ?? 'triage';
      });
      return { ticket: id, title: args.title };
    },
  });

  return { sendEmail, createTicket, chargeCard };
}
