/**
 * The network mode's report: loopback and each round trip side by side, per
 * no-op level, ours against the peer, with BullMQ's own share (bare), and
 * the goals on a network (see bench/run-all.ts and bench/rtt-proxy.ts).
 */
import { levelName, roundRatios, spread, type LevelFigures, type PassKind } from './queue.js';
import { median } from './support.js';
/** One network setting's timed levels: loopback (`rttMs` 0) or through the delaying proxy. */
export interface NetworkRun {
  /** The round trip asked for, ms (0: loopback). */
  readonly rttMs: number;
  /** What a PING through the proxy measured on top of one straight to the server, ms. */
  readonly addedMs: number;
  readonly levels: readonly LevelFigures[];
}

/** The goals on a network, from `rttMs` > 0: one call and a three-call turn against the peer. */
export interface NetworkGoals {
  /** wrapped/peer jobs/s, one call per job, at c=1 and c=50. */
  readonly oneCall: number;
  /** wrapped/peer jobs/s of the turn at c=1. */
  readonly turnRate: number;
  /** wrapped/peer time in the processor per job of the turn at c=1, at most. */
  readonly turnLatency: number;
}

/**
 * Loopback and each round trip side by side, per level (no-op tool): ours
 * and the peer's jobs/s and time per job, and the per-round ratios'
 * medians; then the network goals.
 */
export function formatNetworkReport(runs: readonly NetworkRun[], goals: NetworkGoals): string[] {
  const lines: string[] = [];
  const head = runs.map((run) => (run.rttMs === 0 ? 'loopback' : `rtt ${run.rttMs} ms (+${run.addedMs.toFixed(2)})`).padEnd(44));
  lines.push(
    '  ours = withToolReceipts, peer = Powertools makeIdempotent; j/s and ms per job in the processor are medians of rounds,',
    '  ratios the median of per-round ratios (ours/peer: above 1 is faster for j/s, below 1 is faster for ms);',
    '  bare = BullMQ alone (no receipts), what a job costs before either side adds its round trips',
    `  ${'level'.padEnd(12)}${head.join('')}`,
  );
  const names = ['c=1', 'c=50', 'c=1 turn 3', 'c=50 turn 3'];
  const find = (run: NetworkRun, name: string) => run.levels.find((level) => level.toolMs === 0 && levelName(level) === name);
  const ratioOf = (a: number[], b: number[]) => median(a.map((value, r) => value / (b[r] ?? value)));
  for (const name of names) {
    const rate = runs.map((run) => {
      const level = find(run, name);
      if (!level) return '-'.padEnd(44);
      const m = (kind: PassKind) => median(level.rates[kind]);
      let cell = `j/s ${m('wrapped').toFixed(0)} vs ${m('peer').toFixed(0)} = ${ratioOf(level.rates.wrapped, level.rates.peer).toFixed(2)}`;
      if (level.rates.parallel.length > 0) cell += ` (par ${ratioOf(level.rates.parallel, level.rates.peer).toFixed(2)})`;
      return cell.padEnd(44);
    });
    const latency = runs.map((run) => {
      const level = find(run, name);
      if (!level) return '-'.padEnd(44);
      const m = (kind: PassKind) => median(level.latencyMs[kind]);
      let cell = `ms ${m('wrapped').toFixed(2)} vs ${m('peer').toFixed(2)} = ${ratioOf(level.latencyMs.wrapped, level.latencyMs.peer).toFixed(2)}`;
      if (level.latencyMs.parallel.length > 0) cell += ` (par ${ratioOf(level.latencyMs.parallel, level.latencyMs.peer).toFixed(2)})`;
      return cell.padEnd(44);
    });
    // BullMQ's own cost per job (bare: fetch, run, finish), the part of a job's time neither side can cut.
    const bare = runs.map((run) => {
      const level = find(run, name);
      return (
        level ? `bare j/s ${median(level.rates.bare).toFixed(0)} (${(1000 / median(level.rates.bare)).toFixed(2)} ms a job)` : '-'
      ).padEnd(44);
    });
    lines.push(`  ${name.padEnd(12)}${rate.join('')}`, `  ${''.padEnd(12)}${latency.join('')}`, `  ${''.padEnd(12)}${bare.join('')}`);
  }
  for (const run of runs.filter((r) => r.rttMs > 0)) {
    const at = `rtt ${run.rttMs} ms`;
    const check = (what: string, values: number[], target: number, atMost = false) => {
      const value = median(values);
      const met = atMost ? value <= target : value >= target;
      lines.push(
        `  goal ${at}: ${what} ${atMost ? '<=' : '>='} ${target.toFixed(2)}: ${spread(values)} -> ${met ? 'MET' : 'MISSED'} (median)`,
      );
    };
    for (const name of names) {
      const level = find(run, name);
      if (!level) continue;
      const rates = roundRatios(level, 'wrapped', 'peer');
      if (level.calls === 1) check(`wrapped/peer j/s ${name}`, rates, goals.oneCall);
      else if (level.concurrency === 1) {
        check(`wrapped/peer j/s ${name}`, rates, goals.turnRate);
        check(
          `wrapped/peer ms per job ${name}`,
          level.latencyMs.wrapped.map((v, r) => v / (level.latencyMs.peer[r] ?? v)),
          goals.turnLatency,
          true,
        );
      }
    }
  }
  return lines;
}
