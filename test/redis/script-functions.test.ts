/**
 * Scripts as Redis Function libraries: the library defines once what needs
 * nothing of a call, FCALL runs the rest, and it must answer exactly as
 * EVAL of the script does. The adapters run a script by FCALL once its
 * library is loaded, and by EVAL whenever it is not (flushed, refused by
 * an ACL), so no call depends on a library being there.
 */
import { createHash, randomBytes } from 'node:crypto';
import fc from 'fast-check';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LOAD_AFTER_RUNS } from '../../src/redis/connection/clients/functions.js';
import { checkedConnection } from '../../src/redis/connection/connection.js';
import { ReceiptStore } from '../../src/redis/receipts/store.js';
import { functionLibraryOf as libraryWithSha } from '../../src/redis/scripts/script-functions.js';
import { packageScripts } from '../../src/redis/scripts/scripts.js';
import { faultTestsSupported, startRedis, type RedisHandle } from '../support/redis.js';
import { CLIENT_KINDS, openCluster, openSingle, type OpenedClient } from '../support/redis-clients.js';
import { clusterSkipReason, startRedisCluster, type RedisClusterHandle } from '../support/redis-cluster.js';
import { freshKey, useRedis } from '../support/redis-fixture.js';

const fixture = useRedis();

/** A script's library, named as the loader names it (from the script's SHA-1). */
const functionLibraryOf = (source: string) => libraryWithSha(source, createHash('sha1').update(source).digest('hex'));

/** The top-level part of a library: what it defines once. */
const definedOnce = (library: string) => library.split("redis.register_function('")[0]!;
const hoistedFunctions = (library: string) => [...definedOnce(library).matchAll(/^local function (\w+)/gm)].map((m) => m[1]!);

async function fcallOf(redis: Redis, source: string, keys: string[], args: string[]): Promise<unknown> {
  const fn = functionLibraryOf(source);
  await redis.call('FUNCTION', 'LOAD', 'REPLACE', fn.library);
  return redis.call('FCALL', fn.name, keys.length, ...keys, ...args);
}

describe('functionLibraryOf', () => {
  it('defines once the functions and constants that need nothing of a call, and leaves the rest in the body', () => {
    const source = [
      "local LIMIT, LABEL = 3, 'x'",
      'local function pure(n) return n + LIMIT end',
      'local function readsKeys() return KEYS[1] end',
      'local now = redis.call("TIME")[1]',
      'local function usesNow() return now end',
      'local function callsBoth() return usesNow() .. pure(1) end',
      'return { pure(1), readsKeys(), callsBoth(), LABEL }',
    ].join('\n');
    const fn = functionLibraryOf(source);
    expect(hoistedFunctions(fn.library)).toEqual(['pure']);
    expect(definedOnce(fn.library)).toContain("local LIMIT, LABEL = 3, 'x'");
    expect(fn.name).toMatch(/^trc_[0-9a-f]{40}$/);
  });

  it('keeps in the body a name some statement assigns, so no call leaves state for the next', async () => {
    const redis = fixture.connect();
    const source = ['local count = 0', 'local function bump() count = count + 1 return count end', 'return bump() + bump()'].join('\n');
    const fn = functionLibraryOf(source);
    expect(definedOnce(fn.library)).not.toContain('local count');
    expect(hoistedFunctions(fn.library)).toEqual([]);
    const first = await fcallOf(redis, source, [], []);
    const second = await redis.call('FCALL', fn.name, 0);
    expect([first, second]).toEqual([3, 3]);
    expect(await redis.eval(source, 0)).toBe(3);
  });

  it('takes a key in a table constructor or a field for no assignment', () => {
    const source = ['local function count() return 1 end', 'local t = { count = 2 }', 't.count = 3', 'return count() + t.count'].join('\n');
    expect(hoistedFunctions(functionLibraryOf(source).library)).toEqual(['count']);
  });

  it('keeps a script whose blocks do not balance whole in the body (it fails to load, as it fails by EVAL)', () => {
    const source = 'local function a() if x then return 1 end\nreturn 2';
    const fn = functionLibraryOf(source);
    expect(hoistedFunctions(fn.library)).toEqual([]);
    expect(fn.library).toContain(`redis.register_function('${fn.name}', function(KEYS, ARGV)\n${source}\nend)`);
  });

  /**
   * A random script: constants, functions f0..fn-1 calling earlier ones,
   * some reading KEYS or ARGV or a local of the body, the body's locals, and
   * a reply of every function's value.
   */
  const program = fc
    .integer({ min: 1, max: 6 })
    .chain((count) =>
      fc.record({
        calls: fc.tuple(...Array.from({ length: count }, (_, i) => fc.subarray(Array.from({ length: i }, (_, j) => j)))),
        reads: fc.tuple(
          ...Array.from({ length: count }, () =>
            fc.constantFrom('none', 'keys', 'argv', 'local', 'constant', 'shadowsOuter', 'ownLocal', 'field'),
          ),
        ),
        localBefore: fc.boolean(),
      }),
    )
    .map(({ calls, reads, localBefore }) => {
      const lines = ["local BASE, NAME = 10, 'n'"];
      if (localBefore) lines.push('local seen = tonumber(ARGV[1]) or 0');
      else lines.push('local seen = 5');
      calls.forEach((callees, i) => {
        const read = reads[i]!;
        const valueOf: Record<string, string> = { none: '0', keys: '#KEYS[1]', argv: 'tonumber(ARGV[1])', constant: 'BASE + #NAME' };
        const value = valueOf[read] ?? 'seen';
        const sum = callees.map((callee) => ` + f${callee}(x)`).join('');
        lines.push(`local function f${i}(x)`, `  if x > 100 then return 0 end`);
        // The body's `seen` read in the declaration of its own (so still the outer one), an own local of that name, a field.
        if (read === 'shadowsOuter') lines.push('  local seen = seen + 1');
        if (read === 'ownLocal') lines.push('  local seen = 3');
        if (read === 'field') lines.push('  local t = { seen = 2 }', '  t.seen = t.seen + 1', '  local seen = t.seen');
        lines.push(`  return x + ${value}${sum}`, 'end');
      });
      lines.push(`return { ${calls.map((_, i) => `f${i}(${i})`).join(', ')} }`);
      return lines.join('\n');
    });

  it('answers as EVAL does, for random scripts, on Redis', async () => {
    const redis = fixture.connect();
    await fc.assert(
      fc.asyncProperty(program, fc.integer({ min: 0, max: 50 }), async (source, arg) => {
        const keys = ['k:{x}:abc'];
        const args = [String(arg)];
        expect(await fcallOf(redis, source, keys, args)).toEqual(await redis.eval(source, 1, ...keys, ...args));
      }),
      { numRuns: 40 },
    );
    await redis.call('FUNCTION', 'FLUSH');
  });
});

describe('the package scripts as libraries', () => {
  it('each loads on Redis, and the claim and the complete define every function once', async () => {
    const redis = fixture.connect();
    const scripts = packageScripts();
    for (const name of scripts.names) {
      const fn = scripts.script(name).lua.function;
      expect(fn, name).toBeDefined();
      expect(await redis.call('FUNCTION', 'LOAD', 'REPLACE', fn!.library), name).toBe(fn!.name);
    }
    for (const name of ['claim', 'complete']) {
      const { source, function: fn } = scripts.script(name).lua;
      const all = [...source.matchAll(/^local function (\w+)/gm)].map((m) => m[1]!);
      expect(hoistedFunctions(fn!.library), name).toEqual(all);
    }
  });
});

/** Counts of FCALL, EVAL and EVALSHA the server has run since its stats were reset. */
async function scriptCalls(admin: Redis): Promise<{ fcall: number; eval: number }> {
  const info = String(await admin.call('INFO', 'commandstats'));
  const calls = (name: string) => Number(new RegExp(`^cmdstat_${name}:calls=(\\d+)`, 'm').exec(info)?.[1] ?? 0);
  return { fcall: calls('fcall'), eval: calls('eval') + calls('evalsha') };
}

/** Waits until `check` holds, for at most 10 s. */
async function eventually(check: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('not within 10 s');
    await new Promise((r) => setTimeout(r, 25));
  }
}

// A server of its own: the counts are the server's, and FUNCTION FLUSH would drop other files' libraries.
describe.skipIf(!faultTestsSupported()).each(CLIENT_KINDS)('a store on %s', (kind) => {
  let server: RedisHandle;
  let admin: Redis;
  const opened: OpenedClient[] = [];
  beforeAll(async () => {
    server = await startRedis();
    admin = new Redis(server.url);
  });
  afterAll(async () => {
    await Promise.all(opened.map((c) => c.close()));
    admin.disconnect();
    await server.stop();
  });
  const storeOn = (url: string) => {
    const client = openSingle(kind, url);
    opened.push(client);
    return new ReceiptStore({ redis: client.client, prefix: server.prefix });
  };
  const settleOne = async (store: ReceiptStore) => {
    const key = freshKey();
    const { fence } = await store.claim(key, { effect: 'opaque' });
    await store.complete(key, fence!, { ok: true });
    return store.inspect(key);
  };

  it('runs its scripts by FCALL once their libraries are loaded, and by EVAL again after FUNCTION FLUSH', async () => {
    const store = storeOn(server.url);
    expect(await settleOne(store)).toMatchObject({ status: 'completed' });
    await eventually(async () => {
      await admin.call('CONFIG', 'RESETSTAT');
      await settleOne(store);
      const calls = await scriptCalls(admin);
      return calls.fcall >= 2 && calls.eval === 0;
    });
    await admin.call('FUNCTION', 'FLUSH');
    // Refused unrun (not loaded): each runs by EVAL, and the libraries are loaded again.
    expect(await settleOne(store)).toMatchObject({ status: 'completed', result: { ok: true } });
    await eventually(async () => {
      await admin.call('CONFIG', 'RESETSTAT');
      await settleOne(store);
      return (await scriptCalls(admin)).eval === 0;
    });
  });

  it('runs a batch by FCALL once loaded, and by EVAL again for each entry FUNCTION FLUSH left unrun', async () => {
    const store = storeOn(server.url);
    const keys = [freshKey(), freshKey()];
    const { fence } = await store.claim(keys[0]!, { effect: 'opaque' });
    await store.complete(keys[0]!, fence!, 'done');
    const names = keys.map((key) => store.redisKey(key));
    // inspectRedisKeys goes out as one batch on a single node.
    const statuses = async () => (await store.inspectRedisKeys(names)).map((record) => record?.status ?? null);
    await eventually(async () => {
      await admin.call('CONFIG', 'RESETSTAT');
      expect(await statuses()).toEqual(['completed', null]);
      return (await scriptCalls(admin)).eval === 0;
    });
    await admin.call('FUNCTION', 'FLUSH');
    expect(await statuses()).toEqual(['completed', null]);
  });

  it('leaves the server no library for a script run fewer times than LOAD_AFTER_RUNS (a command-line call)', async () => {
    const store = storeOn(server.url);
    await admin.call('FUNCTION', 'FLUSH');
    await settleOne(store);
    await new Promise((r) => setTimeout(r, 100));
    expect(await admin.call('FUNCTION', 'LIST', 'LIBRARYNAME', 'trc_*')).toEqual([]);
  });

  it('stays on EVAL for a user the server does not let load functions', async () => {
    const user = `nofn-${kind}`;
    await admin.call('ACL', 'SETUSER', user, 'on', '>secret', '~*', '&*', '+@all', '-function', '-fcall');
    const url = server.url.replace('redis://', `redis://${user}:secret@`);
    const store = storeOn(url);
    // Past the runs after which a library is loaded, with time for the load to be refused.
    for (let i = 0; i <= LOAD_AFTER_RUNS + 2; i++) expect(await settleOne(store)).toMatchObject({ status: 'completed' });
    await new Promise((r) => setTimeout(r, 100));
    await admin.call('CONFIG', 'RESETSTAT');
    for (let i = 0; i < 3; i++) await settleOne(store);
    const calls = await scriptCalls(admin);
    expect(calls.fcall).toBe(0);
    expect(calls.eval).toBeGreaterThanOrEqual(6);
  });
});

// Each master loads the libraries of the scripts whose keys it owns, and runs them by FCALL from then on.
describe.skipIf(clusterSkipReason() !== undefined)('stores on a three-master Cluster', () => {
  let cluster: RedisClusterHandle;
  const opened: OpenedClient[] = [];
  beforeAll(async () => {
    cluster = await startRedisCluster(3);
  }, 120_000);
  afterAll(async () => {
    await Promise.all(opened.map((c) => c.close()));
    await cluster?.stop();
  });

  it.each(CLIENT_KINDS)(
    'on %s: run claims and completes by FCALL on every master once loaded, and by EVAL again on one whose functions were flushed',
    async (kind) => {
      const client = openCluster(kind, cluster.nodes[0]!);
      opened.push(client);
      // node-redis connects a Cluster client in the background: wait until it answers.
      const connection = checkedConnection(client.client, 'script-functions.test');
      await eventually(() =>
        connection.command('PING', []).then(
          () => true,
          () => false,
        ),
      );
      const store = new ReceiptStore({ redis: client.client, prefix: `${cluster.prefix}${kind}` });
      // Runs enough that each master owns some of them.
      const settleRuns = async () => {
        for (let run = 0; run < 12; run++) {
          const key = { ...freshKey(), runId: `run-${run}-${randomBytes(3).toString('hex')}` };
          const { fence } = await store.claim(key, { effect: 'opaque' });
          await store.complete(key, fence!, { run });
        }
      };
      const admins = cluster.nodes.map((node) => new Redis(node.url));
      try {
        const perMaster = () => Promise.all(admins.map((admin) => scriptCalls(admin)));
        await eventually(async () => {
          await Promise.all(admins.map((admin) => admin.call('CONFIG', 'RESETSTAT')));
          await settleRuns();
          const calls = await perMaster();
          return calls.every((c) => c.fcall > 0 && c.eval === 0);
        });
        await admins[1]!.call('FUNCTION', 'FLUSH');
        await settleRuns();
        await eventually(async () => {
          await Promise.all(admins.map((admin) => admin.call('CONFIG', 'RESETSTAT')));
          await settleRuns();
          return (await perMaster()).every((c) => c.eval === 0);
        });
      } finally {
        admins.forEach((admin) => admin.disconnect());
      }
    },
    60_000,
  );
});
