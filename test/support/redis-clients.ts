/**
 * The Redis clients the store contract runs on: ioredis 5 and 6 and
 * node-redis 6 and 5, each able to reach a single server, a Cluster and a
 * Sentinel set. `TEST_REDIS_CLIENT` names the one the store suites use
 * (default ioredis 5); vitest.config.ts runs those suites once per client.
 */
import { Cluster as Cluster5, Redis as Redis5 } from 'ioredis';
import { Cluster as Cluster6, Redis as Redis6 } from 'ioredis-v6';
import { createClient as createClient6, createCluster as createCluster6, createSentinel as createSentinel6 } from 'redis';
import { createClient as createClient5, createCluster as createCluster5, createSentinel as createSentinel5 } from 'redis-v5';
import type { RedisConnection } from '../../src/redis/connection/connection.js';

export const CLIENT_KINDS = ['ioredis-5', 'ioredis-6', 'node-redis-6', 'node-redis-5'] as const;
export type ClientKind = (typeof CLIENT_KINDS)[number];

/** A client and how to close it. */
export interface OpenedClient {
  readonly client: RedisConnection;
  close(): Promise<void>;
}

interface Address {
  readonly host: string;
  readonly port: number;
}

/** The client the store suites use in this process (`TEST_REDIS_CLIENT`). */
export function clientKindUnderTest(): ClientKind {
  const named = process.env['TEST_REDIS_CLIENT'] ?? 'ioredis-5';
  if (!(CLIENT_KINDS as readonly string[]).includes(named))
    throw new Error(`TEST_REDIS_CLIENT must be one of ${CLIENT_KINDS.join(', ')}; got ${named}`);
  return named as ClientKind;
}

type NodeRedisLike = {
  connect(): Promise<unknown>;
  on(event: 'error', listener: (e: unknown) => void): unknown;
  close?(): Promise<void>;
  destroy?(): void | Promise<void>;
  quit?(): Promise<unknown>;
  disconnect?(): Promise<void> | void;
};

/** Starts connecting a node-redis client now (commands queue until it is ready) and returns it. */
function started<T extends NodeRedisLike>(client: T): OpenedClient {
  client.on('error', () => undefined); // a server the test kills must not crash the process
  const connecting = client.connect().catch(() => undefined);
  return {
    client: client as unknown as RedisConnection,
    async close() {
      await connecting;
      try {
        if (client.close) await client.close();
        else if (client.quit) await client.quit();
      } catch {
        await Promise.resolve(client.destroy?.()).catch(() => undefined);
      }
    },
  };
}

function ioredis(client: { quit(): Promise<unknown>; disconnect(): void }): OpenedClient {
  return {
    client: client as unknown as RedisConnection,
    close: async () => {
      await client.quit().catch(() => client.disconnect());
    },
  };
}

/** A client of `kind` to one server at `url`. */
export function openSingle(kind: ClientKind, url: string): OpenedClient {
  switch (kind) {
    case 'ioredis-5':
      return ioredis(new Redis5(url, { maxRetriesPerRequest: 3 }));
    case 'ioredis-6':
      return ioredis(new Redis6(url, { maxRetriesPerRequest: 3 }));
    case 'node-redis-6':
      return started(createClient6({ url }));
    case 'node-redis-5':
      return started(createClient5({ url }));
  }
}

/** A Cluster client of `kind` seeded with `seed`. */
export function openCluster(kind: ClientKind, seed: Address): OpenedClient {
  const url = `redis://${seed.host}:${seed.port}`;
  switch (kind) {
    case 'ioredis-5':
      return ioredis(new Cluster5([seed], { redisOptions: { maxRetriesPerRequest: 3 } }));
    case 'ioredis-6':
      return ioredis(new Cluster6([seed], { redisOptions: { maxRetriesPerRequest: 3 } }));
    case 'node-redis-6':
      return started(createCluster6({ rootNodes: [{ url }] }));
    case 'node-redis-5':
      return started(createCluster5({ rootNodes: [{ url }] }));
  }
}

/** A client of `kind` to the master the sentinels at `sentinels` name `name`. */
export function openSentinel(kind: ClientKind, sentinels: readonly Address[], name: string): OpenedClient {
  const nodes = sentinels.map((s) => ({ host: s.host, port: s.port }));
  switch (kind) {
    case 'ioredis-5':
      return ioredis(new Redis5({ sentinels: nodes, name, maxRetriesPerRequest: 3 }));
    case 'ioredis-6':
      return ioredis(new Redis6({ sentinels: nodes, name, maxRetriesPerRequest: 3 }));
    case 'node-redis-6':
      return started(createSentinel6({ name, sentinelRootNodes: nodes }));
    case 'node-redis-5':
      return started(createSentinel5({ name, sentinelRootNodes: nodes }));
  }
}
