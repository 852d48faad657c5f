/**
 * Typed reads over a {@link ReceiptsConnection}, for the commands whose reply
 * the callers pick apart. Where RESP2 and RESP3 shape a reply differently
 * (node-redis 6 speaks RESP3 by default), both are read to the same value.
 */
import type { ReceiptsConnection, ReceiptsNode } from './types.js';

/** `ZRANGE key start stop`: the members. */
export async function zrange(redis: ReceiptsConnection, key: string, start: number, stop: number): Promise<string[]> {
  return (await redis.command('ZRANGE', [key, start, stop], key)) as string[];
}

/** `ZRANGE key start stop WITHSCORES`: `[member, score]` pairs (RESP2 flat, RESP3 nested). */
export async function zrangeWithScores(redis: ReceiptsConnection, key: string, start: number, stop: number): Promise<[string, number][]> {
  const reply = (await redis.command('ZRANGE', [key, start, stop, 'WITHSCORES'], key)) as unknown[];
  const pairs: [string, number][] = [];
  if (reply.length > 0 && Array.isArray(reply[0])) {
    for (const pair of reply as [string, unknown][]) pairs.push([String(pair[0]), Number(pair[1])]);
  } else {
    for (let i = 0; i + 1 < reply.length; i += 2) pairs.push([String(reply[i]), Number(reply[i + 1])]);
  }
  return pairs;
}

/** `HMGET key field…`: a value or `null` per field. */
export async function hmget(redis: ReceiptsConnection, key: string, ...fields: string[]): Promise<(string | null)[]> {
  return (await redis.command('HMGET', [key, ...fields], key)) as (string | null)[];
}

/** `HSCAN key cursor MATCH pattern COUNT count`: the next cursor and a flat field/value list. */
export async function hscan(
  redis: ReceiptsConnection,
  key: string,
  cursor: string,
  pattern: string,
  count: number,
): Promise<[cursor: string, elements: string[]]> {
  const [next, elements] = (await redis.command('HSCAN', [key, cursor, 'MATCH', pattern, 'COUNT', count], key)) as [unknown, unknown[]];
  // RESP3 may shape the pairs as a map; flatten it back to field, value, field, value.
  const flat = Array.isArray(elements)
    ? elements.flat().map(String)
    : Object.entries(elements as Record<string, unknown>)
        .flat()
        .map(String);
  return [String(next), flat];
}

/** `ZADD key NX score member`. */
export function zaddNx(redis: ReceiptsConnection, key: string, score: number, member: string): Promise<unknown> {
  return redis.command('ZADD', [key, 'NX', score, member], key);
}

/** `ZREM key member…`. */
export function zrem(redis: ReceiptsConnection, key: string, ...members: string[]): Promise<unknown> {
  return redis.command('ZREM', [key, ...members], key);
}

/** `TIME`: the server clock in ms. */
export async function serverTimeMs(redis: ReceiptsConnection): Promise<number> {
  const [seconds, micros] = (await redis.command('TIME', [])) as [number | string, number | string];
  return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
}

/** `CONFIG GET name` on one server: the value, or `undefined` (RESP2 pair list, RESP3 map). */
export async function configGet(node: ReceiptsNode, name: string): Promise<string | undefined> {
  const reply = await node.command('CONFIG', ['GET', name]);
  if (Array.isArray(reply)) return typeof reply[1] === 'string' ? reply[1] : undefined;
  if (reply instanceof Map) {
    const value: unknown = reply.get(name);
    return typeof value === 'string' ? value : undefined;
  }
  if (typeof reply === 'object' && reply !== null) {
    const value = (reply as Record<string, unknown>)[name];
    return typeof value === 'string' ? value : undefined;
  }
  return undefined;
}

/** Whether `error` is the server's error reply to a command (it answered, refusing it), whichever client read it. */
export function isReplyError(error: unknown): boolean {
  // ioredis names its replies' errors ReplyError; node-redis throws an ErrorReply (or its SimpleError) without a name.
  return (
    error instanceof Error && (error.name === 'ReplyError' || ['ErrorReply', 'SimpleError', 'BlobError'].includes(error.constructor.name))
  );
}
