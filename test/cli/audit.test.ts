/**
 * What an operator needs to audit a call: `show` names the idempotency key,
 * where the arguments are and since when the call is ambiguous; every
 * `resolve` refusal says what differs; the receipt's history keeps every
 * verdict across later attempts; and an empty answer under a mistyped
 * prefix or tenant says so. Against a real Redis, through the command
 * functions and the real CLI.
 */
import { parseArgs } from 'node:util';
import { describe, expect, it } from 'vitest';
import { idempotencyKeyFor } from '../../src/core/identity.js';
import type { OptionValues } from '../../src/cli/command.js';
import { ambiguousCommand } from '../../src/cli/commands/ambiguous.js';
import { resolveCommand, resolveSpec, type ResolveArgs } from '../../src/cli/commands/resolve.js';
import { runCommand } from '../../src/cli/commands/run.js';
import { showCommand } from '../../src/cli/commands/show.js';
import { statsCommand } from '../../src/cli/commands/stats.js';
import { ResolveRefusedError } from '../../src/cli/errors.js';
import { isoTime } from '../../src/cli/format.js';
import { freshKey, useRedis, waitForLeaseExpiry } from '../support/redis-fixture.js';
import { Capture, hasStackTrace, makeAmbiguous, spawnCli } from './support.js';

const fixture = useRedis();
const JOB = { queue: 'tool-calls', prefix: 'bull', id: '4711' };

function resolveArgs(redisKey: string, argv: string[]): ResolveArgs {
  const { values, positionals } = parseArgs({ args: [redisKey, ...argv], options: resolveSpec.options, allowPositionals: true });
  return resolveSpec.parse(values as OptionValues, positionals);
}

async function refusalOf(promise: Promise<unknown>): Promise<ResolveRefusedError> {
  const error = await promise.then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(error).toBeInstanceOf(ResolveRefusedError);
  return error as ResolveRefusedError;
}

describe('show', () => {
  it('prints the idempotency key, where the arguments are, and since when the call is ambiguous as `ambiguous` lists it', async () => {
    const store = fixture.store();
    const key = freshKey({ toolName: 'send_email' });
    // An opaque attempt whose lease ran out, which no claim has flagged yet.
    await store.claim(key, { effect: 'opaque', leaseMs: 60, job: JOB });
    await waitForLeaseExpiry(store, key);

    const out = new Capture();
    await showCommand({ store, out, args: { redisKey: store.redisKey(key), json: false } });
    expect(out.text).toMatch(new RegExp(`idempotency key\\s+${idempotencyKeyFor(key)} \\(ctx\\.idempotencyKey`));
    expect(out.text).toMatch(
      new RegExp(
        `arguments\\s+digest ${key.argsHash}; in the data of job 4711 of queue tool-calls \\(attempt 1; redis-cli HGET bull:tool-calls:4711 data\\)`,
      ),
    );
    const record = (await store.inspect(key))!;
    expect(record.ambiguousMs).toBeNull();
    expect(out.text).toMatch(new RegExp(`ambiguous since\\s+${isoTime(record.leaseUntilMs!)} \\(`));

    const listed = new Capture();
    await ambiguousCommand({ store, out: listed, args: { json: false } });
    expect(listed.lines.find((l) => l.includes(store.redisKey(key)))).toContain(isoTime(record.leaseUntilMs!));

    const json = new Capture();
    await showCommand({ store, out: json, args: { redisKey: store.redisKey(key), json: true } });
    expect(JSON.parse(json.text)).toMatchObject({
      idempotencyKey: idempotencyKeyFor(key),
      ambiguousSinceMs: record.leaseUntilMs,
      jobs: [{ ...JOB, attempt: 1 }],
      history: [],
    });
  });
});

describe('resolve refusals say what differs', () => {
  it("a mistyped --attempts: the attempt typed against the receipt's", async () => {
    const store = fixture.store();
    const key = freshKey();
    await makeAmbiguous(store, key);
    await store.resolve(key, { attemptsSeen: 1, outcome: 'failed', error: 'not sent' });
    await makeAmbiguous(store, key); // attempt 2 dies too
    const before = await fixture.connect().hgetall(store.redisKey(key));

    const typo = await refusalOf(
      resolveCommand({ store, out: new Capture(), args: resolveArgs(store.redisKey(key), ['--attempts', '7', '--completed']) }),
    );
    expect(typo.reason).toBe('attempt_mismatch');
    expect(typo.message).toContain(
      'you typed --attempts 7, the receipt is at attempt 2 (running): it has never reached attempt 7; check what you typed',
    );
    expect(typo.message).not.toMatch(/moved on/);
    expect(await fixture.connect().hgetall(store.redisKey(key))).toEqual(before);
  });

  it('a mistyped --epoch: never this receipt\'s, not "expired and claimed again"', async () => {
    const store = fixture.store();
    const key = freshKey();
    await makeAmbiguous(store, key);
    const { epoch } = (await store.inspect(key))!;
    const typed = `${epoch.slice(0, 5)}${epoch[5] === 'Q' ? 'R' : 'Q'}${epoch.slice(6)}`;
    const error = await refusalOf(
      resolveCommand({
        store,
        out: new Capture(),
        args: resolveArgs(store.redisKey(key), ['--attempts', '1', `--epoch=${typed}`, '--failed', '--error', 'x']),
      }),
    );
    expect(error.reason).toBe('epoch_never_this_receipts');
    expect(error.message).toContain(`the epoch you typed, ${typed}, never was this receipt's`);
    expect(error.message).not.toMatch(/expired|claimed again/);
    expect(await store.inspect(key)).toMatchObject({ status: 'running', resolvedMs: null });

    // Through the real CLI: exit 1, one sentence, no stack.
    const run = await spawnCli(
      ['resolve', store.redisKey(key), '--prefix', store.prefix, '--attempts', '1', `--epoch=${typed}`, '--failed', '--error', 'x'],
      fixture.handle().url,
    );
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/^tool-receipts: not resolved, nothing was written: the epoch you typed, \S+, never was this receipt's/);
    expect(run.stderr.trim().split('\n')).toHaveLength(1);
    expect(hasStackTrace(run.stderr)).toBe(false);
  });

  it('an attempt already settled: who settled it, from the history', async () => {
    const store = fixture.store();
    const key = freshKey();
    await makeAmbiguous(store, key);
    await store.resolve(key, { attemptsSeen: 1, outcome: 'completed', result: 'sent', by: 'carol' });
    const error = await refusalOf(
      resolveCommand({
        store,
        out: new Capture(),
        args: resolveArgs(store.redisKey(key), ['--attempts', '1', '--failed', '--error', 'x']),
      }),
    );
    expect(error.reason).toBe('settled');
    expect(error.message).toMatch(/attempt 1 is already completed: an operator resolved it completed by carol \d{4}-/);
  });
});

describe('the history', () => {
  it("keeps the operator's verdict (who, when, what, attempt, note) after the call runs again, in show and --json", async () => {
    const store = fixture.store();
    const key = freshKey();
    await makeAmbiguous(store, key);
    const out = new Capture();
    await resolveCommand({
      store,
      out,
      args: resolveArgs(store.redisKey(key), [
        '--attempts',
        '1',
        '--failed',
        '--error',
        'no message in the outbox',
        '--by',
        'alice',
        '--note',
        'checked SES, ticket OPS-12',
      ]),
    });
    expect(out.text).toContain("Recorded in the receipt's history as entry 1, by alice, with your note.");

    // The call runs again as attempt 2 and completes: the verdict fields of attempt 1 are cleared.
    const again = await store.claim(key, { effect: 'opaque' });
    await store.complete(key, again.fence!, 'sent');
    const shown = new Capture();
    await showCommand({ store, out: shown, args: { redisKey: store.redisKey(key), json: false } });
    expect(shown.text).toMatch(/resolved\s+-\n/);
    expect(shown.text).toMatch(
      /history\s+#1 \d{4}-\S+ \([^)]+\)\s+resolve\.failed\s+attempt 1\s+by alice\s+note: "checked SES, ticket OPS-12"\s+error: "no message in the outbox"/,
    );
    const json = new Capture();
    await showCommand({ store, out: json, args: { redisKey: store.redisKey(key), json: true } });
    expect(JSON.parse(json.text)).toMatchObject({
      attempts: 2,
      status: 'completed',
      resolvedMs: null,
      history: [
        { seq: 1, what: 'resolve.failed', by: 'alice', attempt: 1, note: 'checked SES, ticket OPS-12', error: 'no message in the outbox' },
      ],
    });
  });

  it('names the OS user and host when --by is not given, and refuses a blank --note as a usage error', () => {
    const key = 'trc:rcpt:{t|r}:tool:h';
    expect(resolveArgs(key, ['--attempts', '1', '--completed']).resolution.by).toMatch(/^.+@.+$/);
    expect(() => resolveArgs(key, ['--attempts', '1', '--completed', '--note', '  '])).toThrow(/--note must be non-blank/);
    expect(() => resolveArgs(key, ['--attempts', '1', '--completed', '--by', 'x'.repeat(201)])).toThrow(/--by must be/);
  });
});

describe('nothing at all under the prefix or tenant given', () => {
  it('ambiguous says so for a mistyped --prefix, in text and --json, and exits 0', async () => {
    const store = fixture.store();
    await makeAmbiguous(store, freshKey());
    const typo = `${store.prefix}x`;
    const text = await spawnCli(['ambiguous', '--prefix', typo], fixture.handle().url);
    expect(text).toMatchObject({ code: 0, stderr: '' });
    expect(text.stdout).toBe(`No receipts at all under prefix '${typo}': check --prefix (the prefix your workers use; default trc).\n`);
    const json = await spawnCli(['ambiguous', '--prefix', typo, '--json'], fixture.handle().url);
    expect(JSON.parse(json.stdout)).toEqual({ prefix: typo, prefixEmpty: true, receipts: [] });
  });

  it('run tells a mistyped tenant from a mistyped prefix', async () => {
    const store = fixture.store();
    const key = freshKey();
    await store.claim(key, { effect: 'opaque' });
    const tenantTypo = new Capture();
    await runCommand({ store, out: tenantTypo, args: { tenantId: `${key.tenantId}x`, runId: key.runId, json: false } });
    expect(tenantTypo.text).toBe(
      `No receipts at all of tenant ${key.tenantId}x under prefix '${store.prefix}' (other tenants have some): check the tenant id.\n`,
    );
    const json = new Capture();
    await runCommand({ store, out: json, args: { tenantId: `${key.tenantId}x`, runId: key.runId, json: true } });
    expect(JSON.parse(json.text)).toMatchObject({ receipts: [], prefixEmpty: false, tenantEmpty: true });

    const elsewhere = fixture.store({ prefix: `${store.prefix}x` });
    const prefixTypo = new Capture();
    await runCommand({ store: elsewhere, out: prefixTypo, args: { tenantId: key.tenantId, runId: key.runId, json: true } });
    expect(JSON.parse(prefixTypo.text)).toMatchObject({ receipts: [], prefixEmpty: true, tenantEmpty: true });
    const found = new Capture();
    await runCommand({ store, out: found, args: { tenantId: key.tenantId, runId: key.runId, json: true } });
    expect(JSON.parse(found.text)).toMatchObject({ prefixEmpty: false, tenantEmpty: false });
  });

  it('stats --tenant <typo> says it read every receipt for want of a registered run, and that the tenant has none', async () => {
    const store = fixture.store({ prefix: `${fixture.handle().prefix}audit` });
    const key = freshKey();
    await store.claim(key, { effect: 'opaque' });
    const typo = `${key.tenantId}x`;
    const out = new Capture();
    await statsCommand({ store, redis: fixture.connect(), out, args: { tenantId: typo, json: false } });
    expect(out.lines.slice(0, 2)).toEqual([
      `No run of tenant ${typo} is registered under prefix ${store.prefix}, so stats read every receipt in scope (a SCAN over the whole keyspace) and found none.`,
      `No receipts at all of tenant ${typo} under prefix '${store.prefix}' (other tenants have some): check the tenant id.`,
    ]);
    const json = new Capture();
    await statsCommand({ store, redis: fixture.connect(), out: json, args: { tenantId: typo, json: true } });
    expect(JSON.parse(json.text)).toMatchObject({
      total: 0,
      readBy: 'scan',
      scanReason: 'no-registered-runs',
      prefixEmpty: false,
      tenantEmpty: true,
    });
    const known = new Capture();
    await statsCommand({ store, redis: fixture.connect(), out: known, args: { tenantId: key.tenantId, json: true } });
    expect(JSON.parse(known.text)).toMatchObject({ total: 1, readBy: 'counting-sets', prefixEmpty: false, tenantEmpty: false });

    const typoPrefix = new Capture();
    await statsCommand({
      store: fixture.store({ prefix: `${store.prefix}x` }),
      redis: fixture.connect(),
      out: typoPrefix,
      args: { json: true },
    });
    expect(JSON.parse(typoPrefix.text)).toMatchObject({ total: 0, readBy: 'scan', scanReason: 'no-registered-runs', prefixEmpty: true });
    const whole = new Capture();
    await statsCommand({ store, redis: fixture.connect(), out: whole, args: { json: true } });
    expect(JSON.parse(whole.text)).toMatchObject({ total: 1, prefixEmpty: false });
    expect(JSON.parse(whole.text)).not.toHaveProperty('tenantEmpty');
  });
});
