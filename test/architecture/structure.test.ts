/**
 * The house's shape, measured from the code's own imports: no import circle
 * among the source files, no import from a layer folder up to one above it,
 * no source file over ~300 lines without a reason stated at its top, and
 * every source file opening with a line on what it is for.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const root = new URL('../../', import.meta.url);
const sources = execFileSync('git', ['ls-files', 'src'], { cwd: root, encoding: 'utf8' })
  .split('\n')
  .filter((file) => file.endsWith('.ts'));
const text = new Map(sources.map((file) => [file, readFileSync(new URL(file, root), 'utf8')]));

/**
 * The layers, lowest first: a folder may import only folders of a lower
 * rank. Folders beside each other (one rank) import neither way.
 */
const RANK: Record<string, number> = {
  core: 0,
  redis: 1,
  repair: 1,
  http: 1,
  offload: 2,
  limits: 2,
  transactional: 2,
  approvals: 2,
  bullmq: 3,
  client: 4,
  mcp: 4,
  otel: 4,
  operator: 4,
  testing: 4,
  console: 5,
  frameworks: 5,
  gateway: 5,
  cli: 6,
  'ai-sdk': 6,
  'openai-agents': 6,
  mastra: 6,
  langgraph: 6,
  'index.ts': 7,
};

/** The source files a file imports (statically, or by `import()` of a literal). */
function importsOf(file: string): string[] {
  const found: string[] = [];
  const statements = /(?:^|\n)\s*(?:import|export)\s(?:[^;'"]*?\sfrom\s*)?['"](\.[^'"]+)['"]|import\(\s*['"](\.[^'"]+)['"]\s*\)/g;
  for (const match of text.get(file)!.matchAll(statements)) {
    const spec = (match[1] ?? match[2])!;
    const target = path.posix.normalize(path.posix.join(path.posix.dirname(file), spec)).replace(/\.js$/, '.ts');
    if (text.has(target)) found.push(target);
  }
  return found;
}

const graph = new Map(sources.map((file) => [file, importsOf(file)]));
const folderOf = (file: string) => file.split('/')[1]!;

/** Strongly connected components of more than one file, or a file importing itself (Tarjan). */
function circles(): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (file: string): void => {
    index.set(file, next);
    low.set(file, next++);
    stack.push(file);
    onStack.add(file);
    for (const to of graph.get(file)!) {
      if (!index.has(to)) {
        visit(to);
        low.set(file, Math.min(low.get(file)!, low.get(to)!));
      } else if (onStack.has(to)) low.set(file, Math.min(low.get(file)!, index.get(to)!));
    }
    if (low.get(file) !== index.get(file)) return;
    const component: string[] = [];
    let member: string;
    do {
      member = stack.pop()!;
      onStack.delete(member);
      component.push(member);
    } while (member !== file);
    if (component.length > 1 || graph.get(file)!.includes(file)) found.push(component.sort());
  };
  for (const file of sources) if (!index.has(file)) visit(file);
  return found;
}

describe('the structure of src/', () => {
  it('has no import circle', () => {
    expect(circles()).toEqual([]);
  });

  it('has no import from a layer folder to one at or above its own layer', () => {
    const upward: string[] = [];
    for (const [file, targets] of graph) {
      const from = folderOf(file);
      for (const target of targets) {
        const to = folderOf(target);
        if (from === to) continue;
        expect(RANK, `${from} or ${to} has no layer in RANK`).toHaveProperty([from]);
        expect(RANK).toHaveProperty([to]);
        if (RANK[to]! >= RANK[from]!) upward.push(`${file} -> ${target}`);
      }
    }
    expect(upward).toEqual([]);
  });

  it('has src/redis in sub-folders, with only its leaves at its root', () => {
    const atRoot = sources.filter((file) => /^src\/redis\/[^/]+\.ts$/.test(file)).map((file) => path.posix.basename(file));
    expect(atRoot.sort()).toEqual(['errors.ts', 'index.ts', 'key-parts.ts', 'keys.ts', 'options.ts', 'settings.ts']);
  });

  it('has src/bullmq in rooms, with at most 8 files at its root', () => {
    const atRoot = sources.filter((file) => /^src\/bullmq\/[^/]+\.ts$/.test(file)).map((file) => path.posix.basename(file));
    expect(atRoot.length).toBeLessThanOrEqual(8);
    const rooms = new Set(sources.filter((file) => /^src\/bullmq\/[^/]+\//.test(file)).map((file) => file.split('/')[2]!));
    expect([...rooms].sort()).toEqual(['call', 'outcomes', 'sweep', 'tools', 'turn']);
  });

  it('has no file over ~300 lines without a reason at its top', () => {
    const long = sources.filter((file) => text.get(file)!.split('\n').length > 300);
    const unexplained = long.filter((file) => !/Over 300 lines:/.test(text.get(file)!.split('\n').slice(0, 12).join('\n')));
    expect(unexplained).toEqual([]);
  });

  // Writes Redis knows as such: what a part outside src/redis may send only through the receipts channel
  // (`channel.write`, `channel.command`), so each waits for durability and has its errors typed alike.
  const WRITES =
    'ZADD|ZREM|ZREMRANGEBYSCORE|ZREMRANGEBYRANK|ZINCRBY|HSET|HSETNX|HDEL|HINCRBY|DEL|UNLINK|SET|SETNX|INCR|INCRBY|EXPIRE|PEXPIRE|XADD|SADD|SREM|LPUSH|RPUSH|LPOP|RPOP|EVAL|EVALSHA|FCALL';
  const RAW_WRITE = new RegExp(String.raw`(?<!channel\s*)\.command\(\s*'(${WRITES})'`, 'gi');

  it('sends no script and no write outside src/redis except through the receipts channel', () => {
    const outside = sources.filter((file) => !file.startsWith('src/redis/'));
    const scripts = outside.filter((file) => /\brunScript\b/.test(text.get(file)!));
    const rawWrites = outside.flatMap((file) =>
      [...text.get(file)!.matchAll(RAW_WRITE)].map((m) => `${file}:${text.get(file)!.slice(0, m.index).split('\n').length}: ${m[0]}`),
    );
    expect({ scripts, rawWrites }).toEqual({ scripts: [], rawWrites: [] });
  });

  it('opens every file with a comment saying what it is for', () => {
    const bare = sources.filter((file) => !/^(#!.*\n)?\s*(\/\*\*|\/\/)/.test(text.get(file)!));
    expect(bare).toEqual([]);
  });
});
