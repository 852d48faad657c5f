/** Tools and helpers shared by the client tests. */
import { readFileSync } from 'node:fs';
import type { Queue, QueueEvents } from 'bullmq';
import { Redis } from 'ioredis';
import { afterEach } from 'vitest';
import { z } from 'zod';
import { createToolCallClient, type ToolCallClientOptions } from '../../src/client/index.js';
import { defineTool } from '../../src/bullmq/index.js';
import { DestructiveRanError } from '../../src/core/index.js';
import type { Lane } from '../bullmq/fixture.js';

/** A fixture of test/fixtures/formats, parsed. */
export const formatFixture = (name: string): unknown =>
  JSON.parse(readFileSync(new URL(`../fixtures/formats/${name}`, import.meta.url), 'utf8'));

/** The two read-only tools the format fixtures call; `runs` counts executions per tool. */
export function fixtureTools() {
  const runs = { get_weather: 0, lookup_order: 0 };
  const getWeather = defineTool({
    name: 'get_weather',
    description: 'The forecast for a city.',
    input: z.object({ city: z.string(), unit: z.enum(['celsius', 'fahrenheit']).default('celsius') }),
    effect: 'opaque',
    readOnly: true,
    execute: ({ city, unit }) => {
      runs.get_weather++;
      return { city, forecast: 'sunny', high: unit === 'fahrenheit' ? 70 : 21, unit };
    },
  });
  const lookupOrder = defineTool({
    name: 'lookup_order',
    description: 'The shipping state of an order.',
    input: z.object({ order_id: z.string() }),
    effect: 'opaque',
    readOnly: true,
    execute: ({ order_id }) => {
      runs.lookup_order++;
      return `Order ${order_id} shipped on 2026-11-28.`;
    },
  });
  return { runs, tools: [getWeather, lookupOrder] };
}

/** A destructive tool that always stops halfway: its job fails for good, with `message` in its failedReason. */
export const haltingWipe = (message: string) =>
  defineTool({
    name: 'wipe_disk',
    input: z.object({}),
    effect: 'opaque',
    destructive: true,
    execute: () => {
      throw new DestructiveRanError(message);
    },
  });

/** A client on the lane's queue and queue events. */
export const clientOn = (l: Lane, options: Partial<ToolCallClientOptions> = {}) =>
  createToolCallClient({ queue: l.queue, queueEvents: l.events, ...options });

/**
 * `open(lane, make)` makes a Queue or QueueEvents on its own connection to the
 * lane's Redis; everything opened is closed after each test.
 */
export function useOwnConnections() {
  const closers: Array<() => Promise<unknown>> = [];
  afterEach(async () => {
    for (const close of closers.splice(0).reverse()) await close().catch(() => undefined);
  });
  return function open<T extends Queue | QueueEvents>(l: Lane, make: (connection: Redis) => T): T {
    const connection = new Redis(l.url, { maxRetriesPerRequest: null });
    const made = make(connection);
    closers.push(
      async () => connection.disconnect(),
      async () => made.close(),
    );
    return made;
  };
}
