/**
 * A three-master Redis Cluster for the worker-process races (the limits'
 * and the in-flight caps'): started before a describe block's tests and
 * stopped after them, and what a race hands its worker processes to meet it,
 * BullMQ on the Cluster too. One helper, so each race file does not restate it.
 */
import type { Cluster } from 'ioredis';
import { clusterSkipReason, useRedisCluster, type RedisClusterHandle } from './redis-cluster.js';

/** Why the races of `what` cannot run on a Cluster here (said once, as a warning), or `undefined` when they can. */
export function raceClusterSkipReason(what: string): string | undefined {
  const reason = clusterSkipReason();
  if (reason) console.warn(`[redis harness] skipping ${what} on a Cluster: ${reason}`);
  return reason;
}

/** What a race's worker processes and the test meet a Cluster with. */
export interface ClusterRaceConnections {
  /** CLUSTER_SEED for the worker processes. */
  readonly connectionEnv: Record<string, string>;
  readonly prefix: string;
  /** The test's own connection, for its reads. */
  readonly redis: Cluster;
  /** BullMQ's connection, and its prefix with a hash tag of its own, so a queue's keys share a slot. */
  readonly bull: Cluster;
  readonly bullPrefix: string;
}

/**
 * Starts a three-master Cluster before the tests of the describe block it is
 * called in, and stops it after them. `cluster()` is the running cluster,
 * `connections()` a fresh set of connections to it for one race.
 */
export function useRaceCluster(): { cluster(): RedisClusterHandle; connections(): ClusterRaceConnections } {
  const running = useRedisCluster();
  return {
    cluster: running,
    connections() {
      const c = running();
      return {
        connectionEnv: { CLUSTER_SEED: `${c.nodes[0]!.host}:${c.nodes[0]!.port}` },
        prefix: c.prefix,
        redis: c.connect(),
        bull: c.connect({ maxRetriesPerRequest: null }),
        bullPrefix: `{${c.prefix}-bull}`,
      };
    },
  };
}
