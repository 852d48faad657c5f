/**
 * `tool-receipts doctor`: checks that the Redis server keeps receipts the way
 * at-most-once needs (no eviction, fsynced AOF, replicas for the durability
 * the workers ask for) and exits 1 when something puts receipts at risk.
 */
import type { RedisConnection } from '../../redis/connection/connection.js';
import { checkRedisForReceipts, type RedisFinding } from '../../redis/operators/doctor.js';
import type { DurabilityOptions } from '../../redis/durability/durability.js';
import { DURABILITY_OPTIONS, JSON_OPTION, durabilityFlags, expectPositionals, type CommandContext, type CommandSpec } from '../command.js';
import { table, terminalText, writeJson, writeLine } from '../format.js';

/** Arguments of {@link doctorCommand}. */
export interface DoctorArgs {
  readonly json: boolean;
  /** The durability the workers use, so the check knows what they need. */
  readonly durability?: DurabilityOptions;
}

const STATUS_LABEL: Record<RedisFinding['status'], string> = { safe: 'safe', 'at-risk': 'AT RISK', unknown: 'unknown' };

/**
 * Prints one line per finding (worst first) and a verdict; with `json`, the
 * report as JSON. Returns exit code 1 when receipts are at risk, else 0.
 */
export async function doctorCommand({ redis, out, args }: CommandContext<DoctorArgs> & { redis: RedisConnection }): Promise<number> {
  const report = await checkRedisForReceipts(redis, args.durability ? { durability: args.durability } : {});
  if (args.json) {
    writeJson(out, report);
    return report.atRisk ? 1 : 0;
  }
  const clustered = report.findings.some((f) => f.node !== undefined);
  const rows = report.findings.map((f) => [
    ...(clustered ? [f.node ?? ''] : []),
    f.check,
    f.status === 'at-risk' ? `${STATUS_LABEL[f.status]} (${f.risk})` : STATUS_LABEL[f.status],
    terminalText(f.message),
  ]);
  for (const line of table([...(clustered ? ['NODE'] : []), 'CHECK', 'STATUS', 'FINDING'], rows)) writeLine(out, line);
  writeLine(out);
  const unknowns = report.findings.filter((f) => f.status === 'unknown').length;
  if (report.atRisk) {
    writeLine(out, `Receipts are at risk (worst: ${report.worst}). A receipt Redis loses is a call that runs again.`);
  } else {
    writeLine(
      out,
      unknowns === 0
        ? 'Receipts are safe on this server.'
        : `Nothing found at risk, but ${unknowns} check(s) could not be made: ask your provider.`,
    );
  }
  return report.atRisk ? 1 : 0;
}

/** The `doctor` command. */
export const doctorSpec: CommandSpec<DoctorArgs> = {
  name: 'doctor',
  synopsis: 'doctor',
  summary: 'check that Redis keeps receipts safely (eviction, AOF, replicas)',
  help: `Usage: tool-receipts doctor [--replicas <n>] [--aof] [--json] [connection options]

Reads what the server lets it read (INFO, CONFIG GET, COMMAND INFO) and says,
per check, whether receipts are safe, at risk (of eviction, failover, power
loss, or of every claim stalling), or unknown (the server refused to say, as
managed services often do with CONFIG). Worst findings first; an evicting
maxmemory-policy is the worst. On a Cluster (--cluster) every master is checked.

Pass the durability your workers use, so the check knows what they need:
  --replicas <n>   workers use durability: { replicas: n }
  --aof            workers use durability: { aof: true } (needs WAITAOF, Redis 7.2+)
  --json           print the report as JSON

Exit code 1 when anything puts receipts at risk, 0 otherwise.`,
  options: { ...JSON_OPTION, ...DURABILITY_OPTIONS },
  parse(values, positionals) {
    expectPositionals('doctor', positionals, []);
    const durability = durabilityFlags(values, 'doctor');
    const json = values['json'] === true;
    return durability ? { json, durability } : { json };
  },
  run: ({ redis, ...rest }) => {
    if (!redis) throw new Error('the doctor command needs the connection; the CLI always passes it');
    return doctorCommand({ ...rest, redis });
  },
};
