/**
 * The shape shared by every `tool-receipts` command: how it reads its part of
 * the command line, and the function that does the work given a store, an
 * output and the parsed arguments (so tests call it without spawning).
 */
import type { ParseArgsConfig } from 'node:util';
import type { RedisConnection } from '../redis/connection/connection.js';
import type { ReceiptStore } from '../redis/receipts/store.js';
import { DEFAULT_KEY_PREFIX } from '../redis/keys.js';
import { CliUsageError } from './errors.js';
import type { Output } from './format.js';

/** What a command function receives. */
export interface CommandContext<A> {
  /** The store to read and resolve receipts with, under the chosen prefix. */
  readonly store: ReceiptStore;
  /** The open connection the store uses, for commands that read the server itself or reach BullMQ (`resolve --retry-job`); always set by the CLI. */
  readonly redis?: RedisConnection;
  /** Where the command prints its result (stdout for the real CLI). */
  readonly out: Output;
  /** The command's own arguments, already parsed and checked. */
  readonly args: A;
  /** The environment the CLI was started with (for secrets better kept off the command line). */
  readonly env?: Readonly<Record<string, string | undefined>>;
}

/** Option values as `node:util` `parseArgs` returns them (a list for an option that may be repeated). */
export type OptionValues = Readonly<Record<string, string | boolean | readonly string[] | undefined>>;

/** What a command that reaches no Redis receives (`redis: false`): its output, arguments and environment. */
export type OfflineCommandContext<A> = Omit<CommandContext<A>, 'store' | 'redis'>;

/** What every command has, whatever it connects to. */
interface CommandBase<A> {
  readonly name: string;
  /** The command with its arguments, for the command list: `show <redisKey>`. */
  readonly synopsis: string;
  /** One line for the command list. */
  readonly summary: string;
  /** Full `--help` text. */
  readonly help: string;
  /** The command's own options, merged with the connection options when parsing. */
  readonly options: NonNullable<ParseArgsConfig['options']>;
  /** Turns parsed option values and positionals into the command's arguments; throws {@link CliUsageError}. */
  parse(values: OptionValues, positionals: readonly string[]): A;
}

/**
 * One command of the CLI. Most read or write receipts, so the CLI connects to
 * Redis and hands them a store; one with `redis: false` (`migrate`, which
 * talks to PostgreSQL alone) runs without any Redis, reachable or not.
 */
export type CommandSpec<A> = CommandBase<A> &
  (
    | {
        readonly redis?: true;
        /** Does the work; may resolve to an exit code (default 0). */
        run(context: CommandContext<A>): Promise<void | number>;
      }
    | {
        readonly redis: false;
        /** Does the work; may resolve to an exit code (default 0). */
        run(context: OfflineCommandContext<A>): Promise<void | number>;
      }
  );

/** The `--json` flag every command has. */
export const JSON_OPTION = { json: { type: 'boolean' } } as const;

/** The flags that say which durability the workers use: `--replicas <n>` and `--aof`. */
export const DURABILITY_OPTIONS = { replicas: { type: 'string' }, aof: { type: 'boolean' } } as const;

/** The workers' durability as `--replicas` and `--aof` give it, or `undefined` when neither asks for any. */
export function durabilityFlags(values: OptionValues, command: string): { replicas: number; aof: boolean } | undefined {
  const replicas = wholeNumberOption(values, 'replicas', 0, command) ?? 0;
  const aof = values['aof'] === true;
  return replicas > 0 || aof ? { replicas, aof } : undefined;
}

/** Checks the number of positionals and returns them; throws {@link CliUsageError}. */
export function expectPositionals(command: string, positionals: readonly string[], names: readonly string[]): string[] {
  if (positionals.length !== names.length) {
    const wanted = names.map((n) => `<${n}>`).join(' ');
    const got = positionals.length === 0 ? 'none' : positionals.map((p) => JSON.stringify(p)).join(' ');
    throw new CliUsageError(
      `${command} takes ${names.length === 0 ? 'no arguments' : wanted}, got ${got}; see tool-receipts ${command} --help`,
      command,
    );
  }
  return [...positionals];
}

/**
 * A flag that takes a whole number: `undefined` when absent, else its value.
 * Anything but plain digits (empty, a sign, a fraction, `NaN`, an exponent)
 * or a number below `min` is a {@link CliUsageError} naming the flag.
 */
export function wholeNumberOption(values: OptionValues, name: string, min: number, command?: string): number | undefined {
  const text = stringOption(values, name);
  if (text === undefined) return undefined;
  const n = /^[0-9]+$/.test(text) ? Number(text) : NaN;
  if (!Number.isSafeInteger(n) || n < min) {
    const wanted = min === 1 ? 'a positive whole number' : `a whole number ≥ ${min}`;
    throw new CliUsageError(`--${name} must be ${wanted}, got ${JSON.stringify(text)}`, command);
  }
  return n;
}

/** A string option's value, or `undefined` when absent. */
export function stringOption(values: OptionValues, name: string): string | undefined {
  const value = values[name];
  return typeof value === 'string' ? value : undefined;
}

/** A repeatable string option's values (`multiple: true`), in the order given; empty when absent. */
export function stringListOption(values: OptionValues, name: string): string[] {
  const value = values[name];
  if (Array.isArray(value)) return value.filter((v): v is string => typeof v === 'string');
  return typeof value === 'string' ? [value] : [];
}

/**
 * How to repeat a command against the same store, for hints printed to the
 * operator: `tool-receipts [--cluster] --prefix p show '<key>'`. Redis keys hold `{`, `|`
 * and `}`, so anything passed as `quoted` is wrapped in single quotes (a key
 * never holds one: `'` is percent-encoded).
 */
export function commandHint(store: ReceiptStore, command: string, quoted: string, rest = ''): string {
  const cluster = store.clustered ? ' --cluster' : '';
  const prefix = store.prefix === DEFAULT_KEY_PREFIX ? '' : ` --prefix ${store.prefix}`;
  return `tool-receipts${cluster}${prefix} ${command} '${quoted}'${rest === '' ? '' : ` ${rest}`}`;
}
