/**
 * Every error code a user can meet is documented: each `code` an error class
 * of the package declares, and each one the CLI prints on its own, appears
 * in backticks in the README's text.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sources(path);
    return entry.name.endsWith('.ts') ? [readFileSync(path, 'utf8')] : [];
  });
}

function declaredCodes(): Set<string> {
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

it('documents every error code in the README', () => {
  const codes = declaredCodes();
  expect(codes.size).toBeGreaterThan(40);
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const missing = [...codes].filter((code) => !readme.includes(`\`${code}\``)).sort();
  expect(missing).toEqual([]);
});
