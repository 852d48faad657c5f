/**
 * The start-up check of a receipts keyspace's Redis (`processor.ready()`):
 * one PING, then the package's Lua scripts loaded on every master, so a
 * Redis that is wrong, down, or cannot run the scripts is found before the
 * first job rather than by every job at its first claim.
 */
import { isReplyError } from '../connection/clients/commands.js';
import { CommandDeadlineError, CommandNotSentError } from '../connection/clients/deadline.js';
import { ReceiptsRedisUnavailableError } from '../connection/unreachable.js';
import { packageScripts } from '../scripts/scripts.js';
import type { ReceiptsChannel } from './channel.js';

/** The clause a failed check command makes of what it threw (after "the receipts Redis at <address>"). */
function problemOf(command: string, error: unknown): string {
  const text = error instanceof Error ? error.message : String(error);
  if (error instanceof CommandNotSentError) return `could not be reached: ${command} was not sent (${text})`;
  if (error instanceof CommandDeadlineError) return `could not be reached: ${command} got ${text}`;
  // A server that answered with an error reply (no script rights, a wrong password) can be reached, but not used.
  if (isReplyError(error)) return `refused ${command}: ${text}`;
  return `could not be reached: ${command} failed (${text})`;
}

/**
 * Sends one PING through the channel's connection (within its deadline),
 * then loads every script of the package (SCRIPT LOAD) on each master.
 * Writes no key. Throws `ReceiptsRedisUnavailableError` (`redis.unavailable`),
 * naming where the client connects, when either fails; a package whose
 * `lua/` cannot be read throws its own `redis.script_definition` or
 * `redis.script_include` error.
 */
export async function checkReceiptsRedis(channel: ReceiptsChannel): Promise<void> {
  const { redis } = channel;
  const scripts = packageScripts();
  const sources = scripts.names.map((name) => scripts.script(name).lua);
  try {
    await redis.command('PING', []);
  } catch (error) {
    throw new ReceiptsRedisUnavailableError(redis.address, problemOf('PING', error), error);
  }
  try {
    for (const node of await redis.masters()) {
      await Promise.all(sources.map((script) => node.command('SCRIPT', ['LOAD', script.source])));
    }
  } catch (error) {
    throw new ReceiptsRedisUnavailableError(redis.address, problemOf("SCRIPT LOAD of the package's Lua scripts", error), error);
  }
}
