/**
 * The earlier releases the rolling-deploy tests run are those releases,
 * however they were made: each packed tarball kept for checkouts without the
 * history holds its commit's scripts byte for byte and the files its build
 * makes.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { historyHasCommit, PACKED_RELEASE_COMMITS, releaseAt } from '../support/previous-release.js';

function filesUnder(root: string, dir: string): string[] {
  return readdirSync(path.join(root, dir), { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => path.relative(root, path.join(entry.parentPath, entry.name)))
    .sort();
}

const releases = await Promise.all(
  PACKED_RELEASE_COMMITS.map(async (commit) => ({ name: commit.slice(0, 7), commit, inHistory: await historyHasCommit(commit) })),
);

describe.each(releases)('release $name', ({ commit, inHistory }) => {
  it('the packed release unpacks into a package a worker and the CLI can run', async () => {
    const packed = await releaseAt(commit, 'tarball');
    expect(packed).toMatchObject({ from: 'tarball', commit });
    const manifest = JSON.parse(readFileSync(path.join(packed.root, 'package.json'), 'utf8')) as {
      name: string;
      bin: Record<string, string>;
    };
    expect(manifest.name).toBe('bullmq-tool-receipts');
    expect(path.join(packed.root, manifest.bin['tool-receipts']!)).toBe(packed.cli);
    expect(filesUnder(packed.root, 'dist')).toEqual(expect.arrayContaining(['dist/index.js', 'dist/redis/index.js', 'dist/cli/main.js']));
  }, 60_000);

  it.skipIf(!inHistory)(
    'the packed release holds the scripts of its commit and the files its build makes',
    async () => {
      const [packed, built] = await Promise.all([releaseAt(commit, 'tarball'), releaseAt(commit, 'history')]);
      const scripts = filesUnder(built.root, 'lua');
      expect(filesUnder(packed.root, 'lua')).toEqual(scripts);
      for (const file of scripts)
        expect(readFileSync(path.join(packed.root, file), 'utf8'), file).toBe(readFileSync(path.join(built.root, file), 'utf8'));
      const code = (root: string) => filesUnder(root, 'dist').filter((file) => file.endsWith('.js'));
      expect(code(packed.root)).toEqual(code(built.root));
      expect(readFileSync(path.join(packed.root, 'package.json'), 'utf8')).toBe(
        readFileSync(path.join(built.root, 'package.json'), 'utf8'),
      );
    },
    180_000,
  );
});
