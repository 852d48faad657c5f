/**
 * What receipts need from Redis, checked: a receipt Redis drops, forgets or
 * loses in a failover is an effect that runs again. Reads what the server
 * lets it read (`INFO`, `CONFIG GET`, `COMMAND INFO`) and says per finding
 * whether receipts are safe, at risk (and of what), or whether it cannot tell.
 * Over 300 lines: one check per finding, each with the sentence it reports; split, they would be read apart.
 */
import { ToolReceiptsError } from '../../core/errors.js';
import { checkOptions, MAX_TIMER_MS, wholeNumber, type OptionsSchema } from '../../core/options.js';
import { checkedConnection, type ReceiptsConnection, type ReceiptsNode, type RedisConnection } from '../connection/connection.js';
import { configGet, isReplyError } from '../connection/clients/commands.js';
import { durabilityOption, durabilityOptions, hasWaitAof, type DurabilityOptions } from '../durability/durability.js';

/** What a finding means for receipts. */
export type FindingStatus = 'safe' | 'at-risk' | 'unknown';

/**
 * What puts receipts at risk, worst first: `eviction` drops receipts outright;
 * `failover` promotes a replica that may miss acknowledged writes;
 * `power-loss` loses what the AOF had not fsynced (or everything, without
 * AOF); `stalled` means the durability asked for cannot be given, so every
 * claim is refused and no call runs.
 */
export type ReceiptRisk = 'eviction' | 'failover' | 'power-loss' | 'stalled';

/** The risks, worst first. */
export const RECEIPT_RISKS: readonly ReceiptRisk[] = ['eviction', 'failover', 'power-loss', 'stalled'];

/** One thing checked on one server. */
export interface RedisFinding {
  /** What was checked: `version`, `config`, `eviction`, `persistence`, `replicas`, `waitaof`, `cluster`, `functions`. */
  readonly check: string;
  readonly status: FindingStatus;
  /** Set when `status` is `at-risk`. */
  readonly risk?: ReceiptRisk;
  /** `host:port` of the server, when the connection reaches several (a Cluster). */
  readonly node?: string;
  /** One sentence: what was found and what to do about it. */
  readonly message: string;
}

/** The doctor's verdict. */
export interface RedisReport {
  /** Every finding, worst first. */
  readonly findings: readonly RedisFinding[];
  /** True when any finding puts receipts at risk. */
  readonly atRisk: boolean;
  /** The worst risk found, if any. */
  readonly worst?: ReceiptRisk;
}

/** What was read from one server; `undefined` where the server would not say. */
interface ServerFacts {
  readonly version?: string;
  readonly policy?: string;
  readonly appendonly?: boolean;
  readonly appendfsync?: string;
  readonly connectedReplicas?: number;
  readonly role?: string;
  readonly clusterEnabled?: boolean;
  readonly waitAof?: boolean;
  /**
   * Whether the server takes Redis Functions: how many of this package's
   * script libraries it holds, the refusal's message when it refuses
   * FUNCTION, `undefined` when it could not be asked.
   */
  readonly functions?: number | { readonly refused: string };
  /** False when CONFIG GET was refused, so the settings come from INFO, where it shows them, or are unknown. */
  readonly configReadable: boolean;
}

function infoField(info: string | undefined, field: string): string | undefined {
  if (info === undefined) return undefined;
  return new RegExp(`^${field}:(.*)$`, 'm').exec(info)?.[1]?.trim();
}

async function attempt<T>(read: () => Promise<T>): Promise<T | undefined> {
  try {
    return await read();
  } catch {
    return undefined; // refused (renamed, ACL, managed service) or unknown: the finding says "unknown"
  }
}

async function configValue(node: ReceiptsNode, name: string): Promise<string | undefined> {
  return attempt(() => configGet(node, name));
}

async function readFacts(node: ReceiptsNode): Promise<ServerFacts> {
  const info = await attempt(async () => String(await node.command('INFO', [])));
  const configPolicy = await configValue(node, 'maxmemory-policy');
  const policy = configPolicy ?? infoField(info, 'maxmemory_policy');
  const aofConfig = await configValue(node, 'appendonly');
  const aofInfo = infoField(info, 'aof_enabled');
  const replicas = infoField(info, 'connected_slaves');
  const cluster = infoField(info, 'cluster_enabled');
  return {
    version: infoField(info, 'redis_version'),
    policy,
    appendonly: aofConfig !== undefined ? aofConfig === 'yes' : aofInfo !== undefined ? aofInfo === '1' : undefined,
    appendfsync: await configValue(node, 'appendfsync'),
    connectedReplicas: replicas === undefined ? undefined : Number(replicas),
    role: infoField(info, 'role'),
    clusterEnabled: cluster === undefined ? undefined : cluster === '1',
    waitAof: await attempt(() => hasWaitAof(node)),
    functions: await functionsOf(node),
    configReadable: configPolicy !== undefined,
  };
}

/** How many of this package's script libraries (`trc_…`) the server holds, or why it refuses FUNCTION. */
async function functionsOf(node: ReceiptsNode): Promise<ServerFacts['functions']> {
  try {
    const libraries = await node.command('FUNCTION', ['LIST', 'LIBRARYNAME', 'trc_*']);
    return Array.isArray(libraries) ? libraries.length : 0;
  } catch (error) {
    return isReplyError(error) ? { refused: (error as Error).message } : undefined;
  }
}

const safe = (check: string, message: string): RedisFinding => ({ check, status: 'safe', message });
const unknown = (check: string, message: string): RedisFinding => ({ check, status: 'unknown', message });
const atRisk = (check: string, risk: ReceiptRisk, message: string): RedisFinding => ({ check, status: 'at-risk', risk, message });

/** The findings for one server's facts, given the durability the workers use. Pure. */
function assessServer(facts: ServerFacts, durability: Required<DurabilityOptions> | undefined): RedisFinding[] {
  const findings: RedisFinding[] = [];
  findings.push(
    facts.version === undefined
      ? unknown('version', 'the server would not say its version (INFO refused)')
      : safe('version', `Redis ${facts.version}${facts.role ? `, role ${facts.role}` : ''}`),
  );

  if (!facts.configReadable) {
    findings.push(
      unknown(
        'config',
        'CONFIG GET is refused (renamed, denied by an ACL, or hidden by a managed service): what INFO shows was used, the rest is unknown; ask your provider for maxmemory-policy, appendonly and appendfsync',
      ),
    );
  }
  if (facts.policy === undefined) {
    findings.push(unknown('eviction', 'maxmemory-policy could not be read; receipts need noeviction, so check it with your provider'));
  } else if (facts.policy === 'noeviction') {
    findings.push(safe('eviction', 'maxmemory-policy is noeviction: Redis refuses writes when full rather than drop a receipt'));
  } else {
    findings.push(
      atRisk(
        'eviction',
        'eviction',
        `maxmemory-policy is ${facts.policy}: when memory runs out Redis drops keys, and receipts carry a TTL, so a dropped receipt lets its call run again; set maxmemory-policy noeviction`,
      ),
    );
  }

  if (facts.appendonly === undefined) {
    findings.push(unknown('persistence', 'appendonly could not be read; a restart without an AOF forgets receipts'));
  } else if (!facts.appendonly) {
    findings.push(
      atRisk(
        'persistence',
        'power-loss',
        'appendonly is no: a crash or restart loses every receipt written since the last snapshot; set appendonly yes and appendfsync always',
      ),
    );
  } else if (facts.appendfsync === undefined) {
    findings.push(
      unknown(
        'persistence',
        'appendonly is yes but appendfsync could not be read (CONFIG refused); receipts survive power loss only with appendfsync always',
      ),
    );
  } else if (facts.appendfsync === 'always') {
    findings.push(safe('persistence', 'appendonly yes, appendfsync always: an acknowledged receipt is on disk before the reply'));
  } else {
    findings.push(
      atRisk(
        'persistence',
        'power-loss',
        `appendfsync is ${facts.appendfsync}: a power loss or OS crash loses up to ${facts.appendfsync === 'everysec' ? 'the last second' : 'the last 30 seconds or more'} of acknowledged receipts; set appendfsync always, or use durability with aof on Redis 7.2+`,
      ),
    );
  }

  const wanted = durability?.replicas ?? 0;
  if (facts.role === 'slave') {
    // A replica's own replica count says nothing of the primary the workers must write to.
    findings.push(
      atRisk(
        'replicas',
        'stalled',
        'this server is a replica: it refuses writes, so no claim can be made here; point the receipts connection (and doctor) at the primary, or use --sentinels',
      ),
    );
  } else if (facts.connectedReplicas === undefined) {
    findings.push(unknown('replicas', 'the number of connected replicas could not be read (INFO refused)'));
  } else if (wanted > facts.connectedReplicas) {
    findings.push(
      atRisk(
        'replicas',
        'stalled',
        `durability asks ${wanted} replica(s) to acknowledge each write, but ${facts.connectedReplicas} are connected: every claim will time out and no call will run`,
      ),
    );
  } else if (wanted > 0) {
    findings.push(
      safe('replicas', `${facts.connectedReplicas} replica(s) connected; durability waits for ${wanted} before an effect starts`),
    );
  } else if (facts.connectedReplicas > 0) {
    findings.push(
      atRisk(
        'replicas',
        'failover',
        `${facts.connectedReplicas} replica(s) replicate asynchronously: a failover can promote one that missed a claim, and the call runs again; pass durability: { replicas: 1 }`,
      ),
    );
  } else {
    findings.push(
      safe(
        'replicas',
        'no replicas: no failover can promote a copy that missed a receipt (a managed service may still fail over: ask your provider)',
      ),
    );
  }

  if (facts.waitAof === undefined) {
    findings.push(unknown('waitaof', 'could not tell whether WAITAOF exists (COMMAND refused)'));
  } else if (durability?.aof && !facts.waitAof) {
    findings.push(
      atRisk('waitaof', 'stalled', 'durability asks for aof, but this server has no WAITAOF (Redis < 7.2): every claim will be refused'),
    );
  } else if (durability?.aof) {
    findings.push(
      facts.appendonly === false
        ? atRisk('waitaof', 'stalled', 'durability asks for aof, but appendonly is no, so WAITAOF fails and every claim will be refused')
        : safe('waitaof', 'WAITAOF is available: each receipt write waits for its fsync'),
    );
  } else {
    findings.push(
      safe(
        'waitaof',
        facts.waitAof
          ? 'WAITAOF is available (durability aof can use it)'
          : 'no WAITAOF (Redis < 7.2): durability aof is unavailable; use appendfsync always',
      ),
    );
  }

  if (facts.functions === undefined) {
    findings.push(unknown('functions', 'could not tell whether the server takes Redis Functions (FUNCTION LIST did not answer)'));
  } else if (typeof facts.functions === 'number') {
    findings.push(
      safe(
        'functions',
        `Redis Functions are available: workers run their scripts by FCALL once they have loaded them (${facts.functions} script librar${facts.functions === 1 ? 'y' : 'ies'} trc_… here)`,
      ),
    );
  } else {
    findings.push(
      safe(
        'functions',
        `FUNCTION is refused (${facts.functions.refused}): workers run their scripts by EVALSHA, as safely, at about an eighth more server CPU a call`,
      ),
    );
  }

  if (facts.clusterEnabled !== undefined) {
    findings.push(
      safe('cluster', facts.clusterEnabled ? "cluster mode: each run's receipts live on the master owning its hash tag" : 'not a cluster'),
    );
  }
  return findings;
}

/** Default of {@link CheckRedisOptions.timeoutMs}: 5 s. */
export const DEFAULT_CHECK_TIMEOUT_MS = 5_000;

/** Options of {@link checkRedisForReceipts}. */
export interface CheckRedisOptions {
  /** The durability the workers use, so the check knows what they need. */
  readonly durability?: DurabilityOptions;
  /**
   * Longest the whole check may take, in ms. Default 5 s. A server that has
   * not answered by then (down, unreachable, frozen) ends the check with
   * {@link RedisCheckFailedError} instead of waiting on the client's retries.
   */
  readonly timeoutMs?: number;
}

/** The rule of each {@link CheckRedisOptions} option. */
export const CHECK_REDIS_SCHEMA: OptionsSchema<CheckRedisOptions> = {
  durability: durabilityOption,
  timeoutMs: wholeNumber(1, 'ms', MAX_TIMER_MS),
};

/**
 * {@link checkRedisForReceipts} could not reach Redis: the connection failed,
 * or the server did not answer within `timeoutMs` (down, unreachable, paused).
 * Nothing was concluded about the server.
 */
export class RedisCheckFailedError extends ToolReceiptsError {
  readonly code = 'redis.unreachable';
  constructor(
    /** The check's time limit, in ms. */
    readonly timeoutMs: number,
    detail: string,
    options?: { cause?: unknown },
  ) {
    super(`checkRedisForReceipts could not reach Redis: ${detail}`, options);
  }
}

/** A connection error, as opposed to a command the server refused (a ReplyError: renamed, denied by an ACL). */
/**
 * Checks a Redis server (or every master of a Cluster) for what receipts
 * need: `noeviction`, an AOF fsynced on every write, replicas enough for the
 * durability asked for (and, without durability, none that a failover could
 * promote), `WAITAOF` when `aof` is asked for; and says whether the server
 * takes Redis Functions (the scripts' cheaper form, never a risk). A worker can call it at start
 * and refuse to run, or log the report. Reads only; never throws for a
 * refused command (that finding is `unknown`). Throws `options.invalid` for
 * options it cannot use, and {@link RedisCheckFailedError} when Redis cannot
 * be reached or does not answer within `timeoutMs` (default 5 s): the check
 * stops waiting then, whatever retries the connection is set up to make.
 */
export async function checkRedisForReceipts(redis: RedisConnection, options: CheckRedisOptions = {}): Promise<RedisReport> {
  const connection = checkedConnection(redis, 'checkRedisForReceipts');
  checkOptions('checkRedisForReceipts', options, CHECK_REDIS_SCHEMA);
  const durability = options.durability
    ? durabilityOptions(options.durability, { owner: 'checkRedisForReceipts', option: 'durability' })
    : undefined;
  const timeoutMs = options.timeoutMs ?? DEFAULT_CHECK_TIMEOUT_MS;
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () =>
        reject(new RedisCheckFailedError(timeoutMs, `no answer within ${timeoutMs} ms (the server is down, unreachable or not answering)`)),
      timeoutMs,
    );
  });
  const check = runChecks(connection, durability, timeoutMs);
  check.catch(() => undefined); // once timed out, its late failure is nobody's business
  try {
    return await Promise.race([check, timedOut]);
  } finally {
    clearTimeout(timer);
  }
}

async function runChecks(
  connection: ReceiptsConnection,
  durability: Required<DurabilityOptions> | undefined,
  timeoutMs: number,
): Promise<RedisReport> {
  try {
    await connection.command('PING', []);
  } catch (error) {
    // A refused PING (an ACL) still proves the server answers; anything else means it cannot be reached.
    if (!isReplyError(error)) {
      throw new RedisCheckFailedError(timeoutMs, error instanceof Error ? error.message : String(error), { cause: error });
    }
  }
  let servers: { node: ReceiptsNode; name?: string }[];
  if (connection.isCluster) {
    servers = (await connection.masters()).map((node) => ({ node, name: node.name }));
  } else {
    servers = (await connection.masters()).map((node) => ({ node }));
  }
  const findings: RedisFinding[] = [];
  for (const { node, name } of servers) {
    for (const finding of assessServer(await readFacts(node), durability)) {
      findings.push(name === undefined ? finding : { ...finding, node: name });
    }
  }
  const rank = (f: RedisFinding) => (f.status === 'at-risk' ? RECEIPT_RISKS.indexOf(f.risk!) : f.status === 'unknown' ? 10 : 20);
  const sorted = findings
    .map((f, i) => ({ f, i }))
    .sort((a, b) => rank(a.f) - rank(b.f) || a.i - b.i)
    .map(({ f }) => f);
  const worst = sorted.find((f) => f.status === 'at-risk')?.risk;
  return worst === undefined ? { findings: sorted, atRisk: false } : { findings: sorted, atRisk: true, worst };
}
