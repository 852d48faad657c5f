/**
 * The error codes a user can meet, three ways at once: the exported union
 * `ToolReceiptsErrorCode` (a `switch` over it is exhaustive), the runtime
 * list `TOOL_RECEIPTS_ERROR_CODES`, and the codes the sources declare. The
 * type-level half is checked by `npm run typecheck`: a class whose code is not
 * in the union fails to compile (the base class narrows `code`), and a code
 * in the union that no exported class declares fails the assertion below.
 * The runtime half reads the sources, so a class not exported anywhere, or a
 * code only the CLI prints, is held to the list as well; and every code must
 * appear in the README's error table and in docs/errors.md.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import * as root from '../../src/index.js';
import * as core from '../../src/core/index.js';
import * as redis from '../../src/redis/index.js';
import * as offload from '../../src/offload/index.js';
import * as repair from '../../src/repair/index.js';
import * as client from '../../src/client/index.js';
import * as otel from '../../src/otel/index.js';
import * as testing from '../../src/testing/index.js';
import * as cliErrors from '../../src/cli/errors.js';
import { isToolReceiptsErrorCode, TOOL_RECEIPTS_ERROR_CODES, type ToolReceiptsError, type ToolReceiptsErrorCode } from '../../src/index.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** The codes of the concrete (constructible) error classes a module exports. */
type DeclaredCodes<M> = {
  [K in keyof M]: M[K] extends new (...args: never) => infer I ? (I extends ToolReceiptsError ? I['code'] : never) : never;
}[keyof M];
type Modules = typeof root & typeof core & typeof redis & typeof offload & typeof repair & typeof client & typeof otel & typeof testing & typeof cliErrors;
/** Printed by the CLI itself (Redis refused a command; a bug), with no class behind them. */
type CliOnly = 'cli.redis_error' | 'cli.unexpected';
type Undeclared = Exclude<ToolReceiptsErrorCode, DeclaredCodes<Modules> | CliOnly>;
// A compile error here names a code of the union that no exported class declares: remove it, or export its class.
const everyCodeIsDeclared: [Undeclared] extends [never] ? true : Undeclared = true;

/** An exhaustive switch, as a user would write one: it compiles only while it covers every code. */
function area(code: ToolReceiptsErrorCode): string {
  switch (code) {
    case 'job.invalid_data':
    case 'job.lock_lost':
    case 'job.cancelled':
    case 'receipt.ambiguous':
    case 'tool.failed':
    case 'options.invalid':
    case 'redis.invalid_connection':
    case 'digest.invalid_secret':
      return 'worker';
    case 'tool.never_started':
    case 'tool.outcome_unknown':
    case 'tool.refused':
    case 'tool.destructive_ran':
    case 'tool.invalid_definition':
    case 'tool.schema_unsupported':
    case 'tool.duplicate_name':
    case 'tool_args.alias_conflict':
    case 'tool_args.invalid_alias':
      return 'tool';
    case 'canonical_json.unsupported_type':
    case 'canonical_json.non_finite_number':
    case 'canonical_json.cycle':
    case 'canonical_json.too_deep':
    case 'identity.malformed_name':
      return 'identity';
    case 'receipt.fenced_out':
    case 'receipt.corrupt':
    case 'receipt.not_ambiguous':
    case 'receipt.contested':
    case 'receipt.not_settled':
    case 'receipt.not_serializable':
    case 'receipt.invalid_input':
    case 'receipt.invalid_prefix':
    case 'receipt.unexpected_reply':
    case 'durability.invalid_options':
    case 'durability.unsupported':
    case 'durability.not_acknowledged':
    case 'redis.no_cluster_masters':
    case 'redis.script_definition':
    case 'redis.script_include':
      return 'redis';
    case 'tool_result.unsafe_ref':
    case 'tool_result.invalid_ref_segment':
    case 'tool_result.invalid_provenance':
    case 'tool_result.invalid_config':
    case 'tool_result.ref_conflict':
      return 'offload';
    case 'turn.ambiguous':
    case 'turn.timeout':
    case 'turn.aborted':
    case 'turn.failed':
    case 'turn.invalid_data':
    case 'turn.conflict':
    case 'turn.invalid_id':
    case 'turn.invalid_timeout':
    case 'format.invalid_message':
    case 'format.result_count':
    case 'tool.error_result':
      return 'client';
    case 'cli.usage':
    case 'cli.invalid_receipt_key':
    case 'cli.receipt_not_found':
    case 'cli.resolve_refused':
    case 'cli.redis_unavailable':
    case 'cli.redis_error':
    case 'cli.unexpected': {
      return 'cli';
    }
    default: {
      const unreachable: never = code;
      return unreachable;
    }
  }
}

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sources(path);
    return entry.name.endsWith('.ts') ? [readFileSync(path, 'utf8')] : [];
  });
}

/** Every code the sources declare: class fields, code constants, the CLI's own reports, the canonical-JSON reasons. */
function declaredInSources(): Set<string> {
  const codes = new Set<string>();
  for (const text of sources(join(ROOT, 'src'))) {
    for (const [, code] of text.matchAll(/readonly code = '([a-z_]+\.[a-z_]+)'/g)) codes.add(code!);
    for (const [, code] of text.matchAll(/_CODE = '([a-z_]+\.[a-z_]+)'/g)) codes.add(code!);
    for (const [, code] of text.matchAll(/report\(io, [^,]+, '([a-z_]+\.[a-z_]+)'/g)) codes.add(code!);
    const reasons = /CanonicalJsonErrorReason =([^;]+);/.exec(text)?.[1];
    for (const [, reason] of reasons?.matchAll(/'([a-z_]+)'/g) ?? []) codes.add(`canonical_json.${reason}`);
  }
  return codes;
}

describe('error codes', () => {
  it('lists each code once, and exactly the codes the sources declare', () => {
    expect(everyCodeIsDeclared).toBe(true);
    expect(new Set(TOOL_RECEIPTS_ERROR_CODES).size).toBe(TOOL_RECEIPTS_ERROR_CODES.length);
    expect([...TOOL_RECEIPTS_ERROR_CODES].sort()).toEqual([...declaredInSources()].sort());
  });

  it('is the union a switch can cover, and the list a parsed code can be checked against', () => {
    expect(TOOL_RECEIPTS_ERROR_CODES.map(area).filter((a) => a === undefined)).toEqual([]);
    expect(isToolReceiptsErrorCode('receipt.ambiguous')).toBe(true);
    for (const other of ['receipt.ambiguou', 'RECEIPT.AMBIGUOUS', '', 42, null, undefined]) expect(isToolReceiptsErrorCode(other)).toBe(false);
  });

  it('is what a thrown error carries', () => {
    const thrown = [
      () => core.canonicalJson({ n: Number.NaN }),
      () => root.hmacSha256Digest(''),
      () => root.parseToolJobData({}),
    ];
    for (const fn of thrown) {
      try {
        fn();
        expect.unreachable('it should have thrown');
      } catch (error) {
        expect(error).toBeInstanceOf(root.ToolReceiptsError);
        expect(isToolReceiptsErrorCode((error as ToolReceiptsError).code)).toBe(true);
      }
    }
  });

  it.each(['README.md', 'docs/errors.md'])('documents every code in %s', (file) => {
    const text = readFileSync(join(ROOT, file), 'utf8');
    const missing = TOOL_RECEIPTS_ERROR_CODES.filter((code) => !text.includes(`\`${code}\``));
    expect(missing).toEqual([]);
  });
});
