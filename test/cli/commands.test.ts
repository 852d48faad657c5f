/**
 * The command functions, run in process against a real Redis with receipts
 * put into each state through the real store.
 */
import { parseArgs } from 'node:util';
import { describe, expect, it } from 'vitest';
import type { OptionValues } from '../../src/cli/command.js';
import { buildResumeJournalNote, journalFromReceipts } from '../../src/core/index.js';
import { ambiguousCommand } from '../../src/cli/commands/ambiguous.js';
import { resolveCommand, resolveSpec, type ResolveArgs, type ResolveReport } from '../../src/cli/commands/resolve.js';
import { runCommand, type RunReport } from '../../src/cli/commands/run.js';
import { showCommand } from '../../src/cli/commands/show.js';
import { InvalidReceiptKeyError, ReceiptNotFoundError, ResolveRefusedError } from '../../src/cli/errors.js';
import { FencedOutError, NotAmbiguousError } from '../../src/redis/errors.js';
import type { ReceiptRecord } from '../../src/redis/receipts/reads/record.js';
import { ReconcileStore } from '../../src/redis/receipts/transitions/reconcile-store.js';
import { freshKey, useRedis, waitForLeaseExpiry, waitUntil } from '../support/redis-fixture.js';
import { Capture, makeAmbiguous } from './support.js';

const fixture = useRedis();

describe('ambiguous', () => {
  it('lists flagged and unflagged opaque receipts whose attempt died, and nothing else', async () => {
    const store = fixture.store();
    const flagged = freshKey({ toolName: 'send_email' });
    const unflagged = freshKey({ toolName: 'charge_card', tenantId: 'acme {eu}' });
    const completed = freshKey({ toolName: 'lookup' });
    const live = freshKey({ toolName: 'create_ticket' });
    const resumable = freshKey({ toolName: 'sync_rows' });
    await makeAmbiguous(store, flagged);
    await makeAmbiguous(store, unflagged, { flag: false });
    await store.complete(completed, (await store.claim(completed, { effect: 'opaque' })).fence!, 'ok');
    await store.claim(live, { effect: 'opaque', leaseMs: 60_000 });
    await store.claim(resumable, { effect: 'resumable', leaseMs: 60 });
    await waitForLeaseExpiry(store, resumable);

    const human = new Capture();
    await ambiguousCommand({ store, out: human, args: { json: false } });
    expect(human.lines[0]).toMatch(/^TENANT\s+RUN\s+TOOL\s+ATTEMPTS\s+RECONCILED\s+SINCE\s+REDIS KEY$/);
    expect(human.text).toContain(store.redisKey(flagged));
    expect(human.text).toContain(store.redisKey(unflagged));
    expect(human.text).toContain('"acme {eu}"');
    for (const key of [completed, live, resumable]) expect(human.text).not.toContain(store.redisKey(key));
    expect(human.text).toContain('2 ambiguous receipts.');
    // Every row lines up under the header: the REDIS KEY column starts at the same offset.
    const column = human.lines[0]!.indexOf('REDIS KEY');
    for (const line of human.lines.slice(1, 3)) expect(line.indexOf(`${store.prefix}:rcpt:`)).toBe(column);

    const json = new Capture();
    await ambiguousCommand({ store, out: json, args: { json: true } });
    const report = JSON.parse(json.text) as { prefix: string; prefixEmpty: boolean; receipts: ReceiptRecord[] };
    expect(report).toMatchObject({ prefix: store.prefix, prefixEmpty: false });
    const records = report.receipts;
    expect(records.map((r) => r.redisKey).sort()).toEqual([store.redisKey(flagged), store.redisKey(unflagged)].sort());
    expect(records.every((r) => r.status === 'running' && r.leaseExpired)).toBe(true);
  });

  it('says so when there are none, apart from when there is no receipt at all under the prefix', async () => {
    const store = fixture.store();
    const out = new Capture();
    // A store under another prefix on the same server sees none of this file's receipts.
    await ambiguousCommand({ store: fixture.store({ prefix: `${store.prefix}x` }), out, args: { json: false } });
    expect(out.text).toBe(
      `No receipts at all under prefix '${store.prefix}x': check --prefix (the prefix your workers use; default trc).\n`,
    );

    const calm = fixture.store({ prefix: `${store.prefix}calm` });
    const key = freshKey();
    await calm.complete(key, (await calm.claim(key, { effect: 'opaque' })).fence!, 'ok');
    const none = new Capture();
    await ambiguousCommand({ store: calm, out: none, args: { json: false } });
    expect(none.text).toBe(`No ambiguous receipts under prefix ${calm.prefix} (1 receipt, none ambiguous).\n`);
    const json = new Capture();
    await ambiguousCommand({ store: calm, out: json, args: { json: true } });
    expect(JSON.parse(json.text)).toEqual({ prefix: calm.prefix, prefixEmpty: false, receipts: [] });
  });
});

describe('run', () => {
  it("lists a run's receipts and prints the resume journal note built from them", async () => {
    const store = fixture.store();
    const base = freshKey();
    const done = { ...base, toolName: 'lookup_customer', argsHash: 'a1' };
    const unknown = { ...base, toolName: 'send_email', argsHash: 'b2' };
    const failed = { ...base, toolName: 'charge_card', argsHash: 'c3' };
    await store.complete(done, (await store.claim(done, { effect: 'resumable' })).fence!, { id: 'cus_881' });
    await makeAmbiguous(store, unknown);
    await store.fail(failed, (await store.claim(failed, { effect: 'opaque' })).fence!, { error: 'card declined' });

    const out = new Capture();
    await runCommand({ store, out, args: { tenantId: base.tenantId, runId: base.runId, json: false } });
    expect(out.text).toContain(`3 receipts for tenant ${base.tenantId}, run ${base.runId}, oldest first:`);
    expect(out.text).toMatch(/1\s+completed\s+1\s+lookup_customer\s+-\s+\{"id":"cus_881"\}/);
    expect(out.text).toMatch(/2\s+ambiguous\s+1\s+send_email\s+expired [\d.]+m?s ago/);
    expect(out.text).toMatch(/3\s+failed\s+1\s+charge_card\s+-\s+error: "card declined"/);
    expect(out.text).toContain(store.redisKey(unknown));
    expect(out.text).toContain('Finished. These already took effect');
    expect(out.text).toContain('  - lookup_customer: result "{\\"id\\":\\"cus_881\\"}"');
    expect(out.text).toContain('Outcome unknown.');
    expect(out.text).toContain('  - send_email');
    expect(out.text).not.toContain('- charge_card');

    const json = new Capture();
    await runCommand({ store, out: json, args: { tenantId: base.tenantId, runId: base.runId, json: true } });
    const report = JSON.parse(json.text) as RunReport;
    expect(report.receipts.map((r) => r.key.toolName)).toEqual(['lookup_customer', 'send_email', 'charge_card']);
    expect(report.journal.completed.map((e) => e.tool)).toEqual(['lookup_customer']);
    expect(report.journal.interrupted.map((e) => e.tool)).toEqual(['send_email']);
    expect(report.note).toContain('Outcome unknown');
  });

  it('shows the content of a result the wrapper recorded, not the recorded block as JSON', async () => {
    const store = fixture.store();
    const sent = { ...freshKey(), toolName: 'send_email', argsHash: 'd4' };
    await store.complete(sent, (await store.claim(sent, { effect: 'opaque' })).fence!, { content: '{"messageId":"msg-8f2c"}' });
    const out = new Capture();
    await runCommand({ store, out, args: { tenantId: sent.tenantId, runId: sent.runId, json: false } });
    expect(out.text).toContain('  - send_email: result "{\\"messageId\\":\\"msg-8f2c\\"}"');
    expect(out.text).not.toContain('content');
    // The README's line: the store's records go straight in.
    const journal = journalFromReceipts(await store.listRun(sent.tenantId, sent.runId));
    expect(journal.completed).toEqual([{ key: 'send_email(-)@0', tool: 'send_email', order: 0, result: '{"messageId":"msg-8f2c"}' }]);
    expect(buildResumeJournalNote(journal)).toContain('send_email: result "{\\"messageId\\":\\"msg-8f2c\\"}"');
  });

  it('says so for a run with no receipts', async () => {
    const store = fixture.store();
    const key = freshKey();
    await store.claim(key, { effect: 'opaque' });
    const out = new Capture();
    await runCommand({ store, out, args: { tenantId: key.tenantId, runId: 'nothing', json: false } });
    expect(out.text).toContain(`No receipts for tenant ${key.tenantId}, run nothing`);
  });
});

describe('show', () => {
  it('prints every field of a receipt and, when ambiguous, how to resolve it', async () => {
    const store = fixture.store({ owner: 'worker-7' });
    const key = freshKey({ toolName: 'send_email', tenantId: 'acme\u001b[31m' });
    await makeAmbiguous(store, key);
    const out = new Capture();
    await showCommand({ store, out, args: { redisKey: store.redisKey(key), json: false } });
    expect(out.text).toMatch(/^redis key\s+\S+:rcpt:/);
    expect(out.text).toContain('tenant           "acme\\u001b[31m"');
    expect(out.text).not.toContain('\u001b');
    expect(out.text).toMatch(/state\s+ambiguous\n/);
    expect(out.text).toMatch(/attempts\s+1\n/);
    expect(out.text).toMatch(/effect\s+opaque\n/);
    expect(out.text).toMatch(/owner\s+worker-7\n/);
    expect(out.text).toMatch(/ambiguous since\s+\d{4}-\d\d-\d\dT/);
    const { epoch } = (await store.inspect(key))!;
    expect(out.text).toMatch(new RegExp(`epoch\\s+${epoch}\n`));
    expect(out.text).toContain(`resolve '${store.redisKey(key)}' --attempts 1 --epoch=${epoch} --completed`);
    expect(out.text).toContain(`resolve '${store.redisKey(key)}' --attempts 1 --epoch=${epoch} --failed`);
    expect(out.text).toContain(`--prefix ${store.prefix}`);

    const json = new Capture();
    await showCommand({ store, out: json, args: { redisKey: store.redisKey(key), json: true } });
    expect(JSON.parse(json.text)).toMatchObject({ key, status: 'running', attempts: 1, leaseExpired: true });
  });

  it('says how a reconcile judged the call: under way, or its verdict with when, by whom and about which attempt', async () => {
    const store = fixture.store();
    const reconciles = new ReconcileStore({ redis: fixture.connect(), prefix: store.prefix });
    const key = freshKey();
    await makeAmbiguous(store, key, { flag: false });
    const fenceOf = async (k: typeof key) => ({ attempt: 1, epoch: (await store.inspect(k))!.epoch });
    await reconciles.begin(key, await fenceOf(key), 60_000, 'reconciler-1');
    const during = new Capture();
    await showCommand({ store, out: during, args: { redisKey: store.redisKey(key), json: false } });
    expect(during.text).toMatch(/reconciled\s+in progress, lease \S+ left\n/);
    expect(during.text).not.toContain('Ambiguous:');

    const other = freshKey();
    await makeAmbiguous(store, other, { flag: false });
    const otherFence = await fenceOf(other);
    await reconciles.begin(other, otherFence, 60_000, 'reconciler-2');
    await reconciles.settle(other, { ...otherFence, reconciles: 1, worker: 'reconciler-2' }, { verdict: 'unknown', note: 'no lookup' });
    const after = new Capture();
    await showCommand({ store, out: after, args: { redisKey: store.redisKey(other), json: false } });
    expect(after.text).toMatch(/reconciled\s+unknown \(no lookup\), attempt 1, by reconciler-2 \d{4}-/);
    expect(after.text).toContain('Ambiguous:');

    // Only the one that still needs a person is listed, and it says the reconcile could not tell.
    const listed = new Capture();
    await ambiguousCommand({ store, out: listed, args: { json: false } });
    expect(listed.text).not.toContain(store.redisKey(key));
    const row = listed.lines.find((l) => l.includes(store.redisKey(other)));
    expect(row).toMatch(/\s1\s+unknown\s/);
  });

  it('refuses a key with no receipt, and a key under another prefix', async () => {
    const store = fixture.store();
    const key = freshKey();
    await expect(showCommand({ store, out: new Capture(), args: { redisKey: store.redisKey(key), json: false } })).rejects.toThrow(
      ReceiptNotFoundError,
    );
    const foreign = store.redisKey(key).replace(store.prefix, 'elsewhere');
    await expect(showCommand({ store, out: new Capture(), args: { redisKey: foreign, json: false } })).rejects.toThrow(
      InvalidReceiptKeyError,
    );
  });
});

/** Resolve arguments parsed from a command line, the way the CLI parses them. */
function resolveArgs(redisKey: string, argv: string[]): ResolveArgs {
  const { values, positionals } = parseArgs({ args: [redisKey, ...argv], options: resolveSpec.options, allowPositionals: true });
  return resolveSpec.parse(values as OptionValues, positionals);
}

describe('resolve', () => {
  it('completed: prints what changed, and a later claim replays the result', async () => {
    const store = fixture.store();
    const key = freshKey();
    const attempt = await makeAmbiguous(store, key);
    const out = new Capture();
    await resolveCommand({
      store,
      out,
      args: resolveArgs(store.redisKey(key), ['--attempts', String(attempt), '--completed', '--result', '{"messageId":"m-1"}']),
    });
    expect(out.lines[0]).toBe(`Resolved ${store.redisKey(key)} as completed at attempt 1.`);
    expect(out.text).toMatch(/state\s+ambiguous\s+completed \(resolved\)/);
    expect(out.text).toMatch(/result\s+-\s+\{"messageId":"m-1"\}/);
    expect(out.text).toMatch(/resolved\s+-\s+\d{4}-/);
    expect(out.text).toContain('Later claims of this call replay the recorded result');

    const claim = await store.claim(key, { effect: 'opaque' });
    expect(claim.decision.kind).toBe('replay');
    expect(claim.result).toEqual({ messageId: 'm-1' });
  });

  it('completed without --result completes with no result value', async () => {
    const store = fixture.store();
    const key = freshKey();
    await makeAmbiguous(store, key);
    const out = new Capture();
    await resolveCommand({ store, out, args: { ...resolveArgs(store.redisKey(key), ['--attempts', '1', '--completed']), json: true } });
    const report = JSON.parse(out.text) as ResolveReport;
    expect(report.before.status).toBe('running');
    expect(report.after).toMatchObject({ status: 'completed', attempts: 1 });
    expect(report.after && 'result' in report.after).toBe(false);
    const claim = await store.claim(key, { effect: 'opaque' });
    expect(claim.decision.kind).toBe('replay');
    expect('result' in claim).toBe(false);
  });

  it('failed: stores the error, and the next claim executes attempt n+1', async () => {
    const store = fixture.store();
    const key = freshKey();
    await makeAmbiguous(store, key);
    const out = new Capture();
    await resolveCommand({
      store,
      out,
      args: resolveArgs(store.redisKey(key), ['--attempts', '1', '--failed', '--error', 'no message in the outbox']),
    });
    expect(out.text).toMatch(/state\s+ambiguous\s+failed \(resolved\)/);
    expect(out.text).toMatch(/error\s+-\s+"no message in the outbox"/);
    expect(out.text).toContain('The next claim of this call runs it again, as attempt 2.');
    expect(await store.inspect(key)).toMatchObject({ status: 'failed', error: 'no message in the outbox' });

    const claim = await store.claim(key, { effect: 'opaque' });
    expect(claim.decision).toEqual({ kind: 'execute', attempt: 2 });
  });

  it('refuses, writing nothing, when the attempts seen are stale', async () => {
    const store = fixture.store();
    const key = freshKey();
    await makeAmbiguous(store, key);
    await store.resolve(key, { attemptsSeen: 1, outcome: 'failed', error: 'first look' });
    await makeAmbiguous(store, key); // attempt 2 runs and dies too
    const before = await store.inspect(key);
    const error = await resolveCommand({
      store,
      out: new Capture(),
      args: resolveArgs(store.redisKey(key), ['--attempts', '1', '--completed']),
    }).catch((err: unknown) => err);
    expect(error).toBeInstanceOf(ResolveRefusedError);
    expect((error as ResolveRefusedError).code).toBe('cli.resolve_refused');
    expect((error as Error).message).toContain(
      'you typed --attempts 1, the receipt is at attempt 2 (running): one more attempt has started since attempt 1',
    );
    expect((error as Error).message).toContain(`after an operator resolved it failed by ${store.owner}`);
    expect(error).toMatchObject({ reason: 'attempt_mismatch' });
    expect((error as Error).cause).toBeInstanceOf(FencedOutError);
    const after = await store.inspect(key);
    expect(after).toMatchObject({ status: 'running', attempts: 2, resolvedMs: null, ambiguousMs: before!.ambiguousMs });
  });

  it('with --epoch, refuses a later lifetime of the same call that is ambiguous at the same attempt', async () => {
    const store = fixture.store({ retentionMs: 400 });
    const key = freshKey();
    await makeAmbiguous(store, key);
    const seen = (await store.inspect(key))!;
    await waitUntil(
      () => store.inspect(key),
      (r) => r === null,
      10_000,
      'the first lifetime to expire',
    );
    await makeAmbiguous(store, key); // claimed again: a new lifetime, ambiguous at attempt 1 too
    const args = resolveArgs(store.redisKey(key), ['--attempts', '1', `--epoch=${seen.epoch}`, '--failed', '--error', 'about the old one']);
    expect(args.resolution).toMatchObject({ attemptsSeen: 1, epochSeen: seen.epoch });
    const error = await resolveCommand({ store, out: new Capture(), args }).catch((err: unknown) => err);
    expect(error).toBeInstanceOf(ResolveRefusedError);
    expect((error as Error).message).toContain(`the epoch you typed, ${seen.epoch}, is of an earlier lifetime of this call, which ended`);
    expect(error).toMatchObject({ reason: 'epoch_lifetime_ended' });
    expect(await store.inspect(key)).toMatchObject({ status: 'running', attempts: 1, resolvedMs: null });
    expect(() => resolveArgs(store.redisKey(key), ['--attempts', '1', '--epoch', 'x y', '--completed'])).toThrow(/--epoch/);
  });

  it('refuses a receipt whose lease is still live', async () => {
    const store = fixture.store();
    const key = freshKey();
    await store.claim(key, { effect: 'opaque', leaseMs: 60_000 });
    const error = await resolveCommand({
      store,
      out: new Capture(),
      args: resolveArgs(store.redisKey(key), ['--attempts', '1', '--failed', '--error', 'x']),
    }).catch((err: unknown) => err);
    expect(error).toBeInstanceOf(ResolveRefusedError);
    expect((error as Error).cause).toBeInstanceOf(NotAmbiguousError);
    expect((error as Error).message).toContain('lease is still live');
    expect(await store.inspect(key)).toMatchObject({ status: 'running', attempts: 1 });
  });

  it('refuses a key whose names decode to a lone surrogate with the typed error, writing nothing', async () => {
    const store = fixture.store();
    const key = store.redisKey(freshKey()).replace(':rcpt:{', ':rcpt:{%ED%A0%80');
    // Sorted: KEYS answers in the server's hash table order, which a rehash (any other test's writes) reshuffles.
    const before = (await fixture.connect().keys(`${store.prefix}:*`)).sort();
    const shown = await showCommand({ store, out: new Capture(), args: { redisKey: key, json: false } }).catch((err: unknown) => err);
    expect(shown).toMatchObject({ code: 'identity.malformed_name' });
    const resolved = await resolveCommand({
      store,
      out: new Capture(),
      args: resolveArgs(key, ['--attempts', '1', '--failed', '--error', 'x']),
    }).catch((err: unknown) => err);
    expect(resolved).toMatchObject({ code: 'identity.malformed_name' });
    expect((await fixture.connect().keys(`${store.prefix}:*`)).sort()).toEqual(before);
  });

  it('refuses a key with no receipt', async () => {
    const store = fixture.store();
    const error = await resolveCommand({
      store,
      out: new Capture(),
      args: resolveArgs(store.redisKey(freshKey()), ['--attempts', '1', '--completed']),
    }).catch((err: unknown) => err);
    expect(error).toBeInstanceOf(ReceiptNotFoundError);
  });
});
