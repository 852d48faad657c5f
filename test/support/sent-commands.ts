/**
 * Records the commands a test's ioredis connection sends, as the round-trip
 * counts read them: a receipt script by its file's name (`claim`,
 * `complete-claim`, …), a group commit batch as `commit-batch(<kind>,…)`,
 * any other command by its name. One entry is one round trip; a script
 * library's FUNCTION LOAD, sent in the background, is not recorded.
 */
import { createHash } from 'node:crypto';
import type { Redis } from 'ioredis';
import { luaScript } from '../../src/redis/scripts/scripts.js';
import { commitBatchEntries } from './commit-batch.js';

/** Each script's name by the SHA-1 of its text (EVAL, EVALSHA) and by its function's name (FCALL). */
const scripts = new Map(
  [
    'claim-4.lua',
    'claim-group-N.lua',
    'complete-4.lua',
    'complete-claim-5.lua',
    'fail-3.lua',
    'reclaim-3.lua',
    'breaker-record-1.lua',
    'commit-batch-N.lua',
    'register-run-1.lua',
    'limit-reserve-3.lua',
    'limit-bind-2.lua',
    'limit-commit-3.lua',
    'limit-settle-2.lua',
    'limit-release-3.lua',
    'limit-slot-acquire-3.lua',
    'limit-slot-release-3.lua',
  ].flatMap((file) => {
    const { sha, function: fn } = luaScript(file);
    const name = file.replace(/-(?:\d+|N)\.lua$/, '');
    return fn === undefined ? [[sha, name] as const] : [[sha, name] as const, [fn.name, name] as const];
  }),
);

/** The kinds of a commit-batch call's entries, in order (EVALSHA sha numkeys keys… argv…). */
function batchKinds(args: readonly string[]): string[] {
  const keyCount = Number(args[1]);
  return commitBatchEntries(args.slice(2, 2 + keyCount), args.slice(2 + keyCount)).map((entry) => entry.kind);
}

/** What {@link recordCommands} gives: the commands sent since the last `take`. */
export interface SentCommands {
  take(): string[];
}

/**
 * Records the commands sent on `redis` from now on. With `replies`, each
 * reply's arrival is recorded too, as `<-` and the command's name, so a
 * test can tell a command sent before the reply of the one before it.
 */
export function recordCommands(redis: Redis, { replies = false } = {}): SentCommands {
  let sent: string[] = [];
  const original = redis.sendCommand;
  redis.sendCommand = ((command: { name: string; args: unknown[]; promise: Promise<unknown> }, stream?: unknown) => {
    // A library's load goes out once a script, in the background: no call waits for it.
    if (command.name === 'function') return (original as (c: unknown, s?: unknown) => unknown).call(redis, command, stream);
    const first = String(command.args[0]);
    const sha = command.name === 'eval' ? createHash('sha1').update(first).digest('hex') : first;
    const name = ['evalsha', 'eval', 'fcall'].includes(command.name) ? (scripts.get(sha) ?? sha) : command.name;
    const entry = name === 'commit-batch' ? `${name}(${batchKinds(command.args.map(String)).join(',')})` : name;
    sent.push(entry);
    const answer = (original as (c: unknown, s?: unknown) => unknown).call(redis, command, stream);
    if (replies) {
      const arrived = () => void sent.push(`<-${entry}`);
      command.promise.then(arrived, arrived);
    }
    return answer;
  }) as typeof redis.sendCommand;
  return {
    take() {
      const taken = sent;
      sent = [];
      return taken;
    },
  };
}
