/**
 * The conformance walk must notice a broken fence in the real Lua: a copy of
 * lua/ whose complete no longer compares the epoch (it passes the receipt's
 * own epoch where the caller's goes), loaded into the test's redis-server
 * under names of its own, disagrees with the model on the path where an
 * attempt of an expired lifetime completes the next one; the package's own
 * scripts agree on that same path.
 */
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { PROTOCOL_HOOKS } from '../../protocol/model/hooks.js';
import { DEFECT_SCENARIOS } from '../../protocol/scenarios.js';
import { packageScripts, ScriptLibrary } from '../../src/redis/scripts/scripts.js';
import { useRedis } from '../support/redis-fixture.js';
import { Divergence } from './conformance/divergence.js';
import { defectPath, pathSides } from './conformance/paths.js';
import { walkFixedPath } from './conformance/walk.js';

const fixture = useRedis();
const copies: string[] = [];
afterAll(() => {
  for (const dir of copies) rmSync(dir, { recursive: true, force: true });
});

/** The fence check in complete, and the same line with the caller's epoch replaced by the receipt's own. */
const FENCED = 'openFenced(receiptKey, indexKey, args[1], args[5], now)';
const UNFENCED = "openFenced(receiptKey, indexKey, args[1], redis.call('HGET', receiptKey, 'epoch') or '', now)";

/** A copy of lua/ with `edit` applied to one file; fails when the edit finds nothing to change. */
function mutatedScripts(file: string, from: string, to: string): ScriptLibrary {
  const dir = mkdtempSync(path.join(tmpdir(), 'mutated-lua-'));
  copies.push(dir);
  cpSync(new URL('../../lua/', import.meta.url), dir, { recursive: true });
  const target = path.join(dir, file);
  const text = readFileSync(target, 'utf8');
  if (!text.includes(from)) throw new Error(`the mutation found no ${JSON.stringify(from)} in lua/${file}`);
  writeFileSync(target, text.replace(from, to));
  return ScriptLibrary.load(pathToFileURL(`${dir}${path.sep}`));
}

describe('a fence check deleted from the real Lua', () => {
  const name = 'a complete that does not check the epoch';
  const scenario = DEFECT_SCENARIOS[name];
  const ctx = { scenario, hooks: PROTOCOL_HOOKS };

  async function walkWith(scripts: ScriptLibrary): Promise<string[]> {
    return (await walkFixedPath(pathSides(fixture, undefined, scenario, scripts), ctx, defectPath(name))).log;
  }

  it('makes the conformance walk fail at the stale complete', async () => {
    const mutated = mutatedScripts('includes/complete.lua', FENCED, UNFENCED);
    expect(mutated.script('complete').lua.source).toContain(UNFENCED);
    const failure = await walkWith(mutated).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(failure).toBeInstanceOf(Divergence);
    // The model fences the stale attempt out (code 0); the mutated script completes the new lifetime with it.
    expect((failure as Divergence).message).toMatch(/^complete: the real system answered \{"code":1,.*the model \{"code":0,/);
  }, 60_000);

  it('walks the same path without a divergence on the package’s own scripts', async () => {
    const log = await walkWith(packageScripts());
    expect(log.some((move) => move.includes('complete'))).toBe(true);
  }, 60_000);
});
