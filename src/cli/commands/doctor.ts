/**
 * `tool-receipts doctor`: checks that the Redis server keeps receipts the way
 * at-most-once needs (no eviction, fsynced AOF, replicas for the durability
 * the workers ask for) and exits 1 when something puts receipts at risk;
 * then advises on what receipts cost in memory (advice only: it never
 * changes the verdict or the exit code).
 */
import type { RedisConnection } from '../../redis/connection/connection.js';
import { checkRedisForReceipts, type RedisFinding } from '../../redis/operators/doctor.js';
import { adviseOnMemory, type MemoryReport } from '../../redis/operators/memory-advice.js';
import type { DurabilityOptions } from '../../redis/durability/durability.js';
import { DURABILITY_OPTIONS, JSON_OPTION, durabilityFlags, expectPositionals, type CommandContext, type CommandSpec } from '../command.js';
import { table, terminalText, writeJson, writeLine, type Output } from '../format.js';

/** Arguments of {@link doctorCommand}. */
export interface DoctorArgs {
  readonly json: boolean;
  /** The durability the workers use, so the check knows what they need. */
  readonly durability?: DurabilityOptions;
}

const STATUS_LABEL: Record<RedisFinding['status'], string> = { safe: 'safe', 'at-risk': 'AT RISK', unknown: 'unknown' };

/**
 * Prints one line per finding (worst first) and a verdict, then the memory
 * advice for the store's prefix; with `json`, the report as JSON with the
 * advice under `memory` (`{ error }` when the server would not answer it). Returns exit code 1 when receipts are at risk, else
 * 0 (the memory advice never changes it).
 */
export async function doctorCommand({ redis, store, out, args }: CommandContext<DoctorArgs> & { redis: RedisConnection }): Promise<number> {
  const report = await checkRedisForReceipts(redis, args.durability ? { durability: args.durability } : {});
  // Advice only: a server that will not answer it (an ACL without SCAN, a command timing out) costs the advice, not the verdict.
  const memory = await adviseOnMemory(redis, { prefix: store.prefix }).catch((error: unknown) => ({
    error: error instanceof Error ? error.message : String(error),
  }));
  if (args.json) {
    writeJson(out, { ...report, memory });
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
  writeMemoryAdvice(out, memory);
  return report.atRisk ? 1 : 0;
}

/** The memory advice after the verdict: one line per topic, in the findings' table style. */
function writeMemoryAdvice(out: Output, memory: MemoryReport | { error: string }): void {
  writeLine(out);
  if ('error' in memory) {
    writeLine(out, `Memory (advice, not a safety finding): cannot tell, the server did not answer: ${terminalText(memory.error)}`);
    return;
  }
  writeLine(out, 'Memory (advice, not a safety finding):');
  const clustered = memory.servers.some((server) => server.node !== undefined);
  const rows = memory.servers.flatMap((server) =>
    server.notes.map((note) => [...(clustered ? [server.node ?? ''] : []), note.topic, terminalText(note.message)]),
  );
  for (const line of table([...(clustered ? ['NODE'] : []), 'TOPIC', 'ADVICE'], rows)) writeLine(out, line);
}

/** The `doctor` command. */
export const doctorSpec: CommandSpec<DoctorArgs> = {
  name: 'doctor',
  synopsis: 'doctor',
  summary: 'check that Redis keeps receipts safely (eviction, AOF, replicas), and advise on their memory',
  help: `Usage: tool-receipts doctor [--replicas <n>] [--aof] [--json] [connection options]

Reads what the server lets it read (INFO, CONFIG GET, COMMAND INFO) and says,
per check, whether receipts are safe, at risk (of eviction, failover, power
loss, or of every claim stalling), or unknown (the server refused to say, as
managed services often do with CONFIG). Worst findings first; an evicting
maxmemory-policy is the worst. On a Cluster (--cluster) every master is checked.

Then it advises on memory (advice only, never a finding): the listpack limits
that decide a receipt's size (or that it cannot tell, CONFIG refused), whether
a compact receipt (receiptLayout 5) stays compact at them, and what up to 32
receipts under --prefix cost now (MEMORY USAGE with their share of their runs'
index and counting set, and how many are listpack or hashtable / skiplist).

Pass the durability your workers use, so the check knows what they need:
  --replicas <n>   workers use durability: { replicas: n }
  --aof            workers use durability: { aof: true } (needs WAITAOF, Redis 7.2+)
  --json           print the report as JSON (the advice under "memory")

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
