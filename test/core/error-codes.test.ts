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
import * as mcp from '../../src/mcp/index.js';
import * as consoleEntry from '../../src/console/index.js';
import * as limits from '../../src/limits/index.js';
import * as approvals from '../../src/approvals/index.js';
import * as transactional from '../../src/transactional/index.js';
import * as frameworks from '../../src/ai-sdk/index.js';
import * as cliErrors from '../../src/cli/errors.js';
import { isToolReceiptsErrorCode, TOOL_RECEIPTS_ERROR_CODES, type ToolReceiptsError, type ToolReceiptsErrorCode } from '../../src/index.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** The codes of the concrete (constructible) error classes a module exports. */
type DeclaredCodes<M> = {
  [K in keyof M]: M[K] extends new (...args: never) => infer I ? (I extends ToolReceiptsError ? I['code'] : never) : never;
}[keyof M];
type Modules = typeof root &
  typeof core &
  typeof redis &
  typeof offload &
  typeof repair &
  typeof client &
  typeof otel &
  typeof testing &
  typeof mcp &
  typeof consoleEntry &
  typeof limits &
  typeof approvals &
  typeof transactional &
  typeof frameworks &
  typeof cliErrors;
/** Printed by the CLI itself (Redis refused a command; a bug), with no class behind them. */
type CliOnly = 'cli.redis_error' | 'cli.unexpected';
type Undeclared = Exclude<ToolReceiptsErrorCode, DeclaredCodes<Modules> | CliOnly>;
// A compile error here names a code of the union that no exported class declares: remove it, or export its class.
const everyCodeIsDeclared: [Undeclared] extends [never] ? true : Undeclared = true;

/** What a user's exhaustive `switch` relies on: the union narrows, and its `default` is unreachable. */
function areaOf(code: ToolReceiptsErrorCode): string {
  const area = code.slice(0, code.indexOf('.'));
  switch (code) {
    case 'receipt.ambiguous':
      return 'ambiguous';
    default: {
      const rest: Exclude<ToolReceiptsErrorCode, 'receipt.ambiguous'> = code;
      return rest === code ? area : 'unreachable';
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
    expect(TOOL_RECEIPTS_ERROR_CODES.map(areaOf)).not.toContain('unreachable');
    expect(areaOf('receipt.ambiguous')).toBe('ambiguous');
    expect(isToolReceiptsErrorCode('receipt.ambiguous')).toBe(true);
    for (const other of ['receipt.ambiguou', 'RECEIPT.AMBIGUOUS', '', 42, null, undefined])
      expect(isToolReceiptsErrorCode(other)).toBe(false);
  });

  it('is what a thrown error carries', () => {
    const thrown = [() => core.canonicalJson({ n: Number.NaN }), () => root.hmacSha256Digest(''), () => root.parseToolJobData({})];
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
