/**
 * The README and docs/ as a reader meets them: the front page stays short
 * and links every page; every relative link and `#anchor` resolves (anchors
 * as GitHub slugs its headings) to a file the package ships, so the links
 * work on npm and in node_modules as well as on GitHub; and a code block
 * that says it is an example file is that file, byte for byte.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import type { ToolCallOutcome } from '../../src/bullmq/index.js';
import type { TurnResult } from '../../src/client/index.js';
import type { GatewayOutcome } from '../../src/gateway/results.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const read = (file: string) => readFileSync(path.join(ROOT, file), 'utf8');
const pages = [
  'README.md',
  ...readdirSync(path.join(ROOT, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
];

/** The text outside fenced code blocks, with inline code blanked, so neither is read as a link. */
function prose(markdown: string): string {
  return markdown.replace(/^```[\s\S]*?^```$/gm, '').replace(/`[^`\n]*`/g, '``');
}

/** GitHub's anchor for each heading, in order, with `-1`, `-2` … for repeats. */
function headingSlugs(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const slugs = new Set<string>();
  const withoutCode = markdown.replace(/^```[\s\S]*?^```$/gm, '');
  for (const [, text] of withoutCode.matchAll(/^#{1,6} (.+)$/gm)) {
    const base = text!
      .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
      .trim()
      .toLowerCase()
      .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
      .replace(/ /g, '-');
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    slugs.add(count === 0 ? base : `${base}-${count}`);
  }
  return slugs;
}

/** The `files` of package.json, plus what npm always packs, as a test on a repo-relative path. */
function shippedBy(): (file: string) => boolean {
  const { files } = JSON.parse(read('package.json')) as { files: string[] };
  const included = files.filter((f) => !f.startsWith('!'));
  const always = ['README.md', 'LICENSE', 'package.json'];
  return (file) => always.includes(file) || included.some((entry) => file === entry || file.startsWith(`${entry}/`));
}

interface Link {
  readonly page: string;
  readonly target: string;
}

function relativeLinks(page: string): Link[] {
  return [...prose(read(page)).matchAll(/\]\(([^)\s]+)\)/g)]
    .map((m) => m[1]!)
    .filter((target) => !/^[a-z][a-z+.-]*:/i.test(target))
    .map((target) => ({ page, target }));
}

describe('the front page', () => {
  const readme = read('README.md');

  it('is under 300 lines', () => {
    expect(readme.split('\n').length).toBeLessThan(300);
  });

  it('links every page of docs/', () => {
    const linked = new Set(relativeLinks('README.md').map((l) => l.target.split('#')[0]));
    expect(pages.filter((p) => p !== 'README.md' && !linked.has(p))).toEqual([]);
  });

  it('shows the quick start commands, install with the peers, and the decisions', () => {
    expect(readme).toContain('npm run demo');
    expect(readme).toContain('npm test');
    expect(readme).toContain('npm install bullmq-tool-receipts bullmq ioredis zod');
    for (const decision of ['**execute**', '**replay**', '**wait**', '**ambiguous**']) expect(readme).toContain(decision);
  });
});

describe('links in README.md and docs/', () => {
  const shipped = shippedBy();
  const links = pages.flatMap(relativeLinks);

  it('finds links to check', () => {
    expect(links.length).toBeGreaterThan(60);
    expect(links.some((l) => l.target.includes('#'))).toBe(true);
  });

  it.each(pages)('every relative link of %s names a file the package ships, and an anchor its headings make', (page) => {
    const problems: string[] = [];
    for (const { target } of relativeLinks(page)) {
      const [file, anchor] = target.split('#') as [string, string | undefined];
      const resolved = file === '' ? page : path.posix.normalize(path.posix.join(path.posix.dirname(page), file)).replace(/\/$/, '');
      if (resolved.startsWith('..')) {
        problems.push(`${target}: outside the repository`);
        continue;
      }
      if (!existsSync(path.join(ROOT, resolved))) {
        problems.push(`${target}: no such file (${resolved})`);
        continue;
      }
      if (!shipped(resolved)) problems.push(`${target}: ${resolved} is not in the package (package.json "files")`);
      if (anchor !== undefined) {
        if (!resolved.endsWith('.md') || statSync(path.join(ROOT, resolved)).isDirectory()) {
          problems.push(`${target}: an anchor into a file that is not markdown`);
        } else if (!headingSlugs(read(resolved)).has(anchor)) {
          problems.push(`${target}: ${resolved} has no heading with the anchor #${anchor}`);
        }
      }
    }
    expect(problems).toEqual([]);
  });

  it("the slugs are GitHub's", () => {
    const slugs = headingSlugs(
      '# Runbook: an ambiguous call at 3 a.m.\n## Counting everything: `tool-receipts stats`\n## Notes\n## Notes\n```\n# not a heading\n```\n',
    );
    expect([...slugs]).toEqual(['runbook-an-ambiguous-call-at-3-am', 'counting-everything-tool-receipts-stats', 'notes', 'notes-1']);
  });
});

/** Every outcome a job's result block can carry; a compile error below names one the list leaves out. */
const JOB_OUTCOMES = ['executed', 'replayed', 'failed', 'rejected', 'ambiguous', 'denied'] as const satisfies readonly ToolCallOutcome[];
/** What `submit` with `approvals: 'return'` gives the calls of a turn parked for approval, besides those. */
const PARKED_OUTCOMES = ['awaiting_approval', 'pending'] as const satisfies readonly TurnResult['outcome'][];
type Unlisted = Exclude<TurnResult['outcome'], (typeof JOB_OUTCOMES)[number] | (typeof PARKED_OUTCOMES)[number]>;
const everyOutcomeListed: [Unlisted] extends [never] ? true : Unlisted = true;

/** Every outcome the gateway's answers name in their `_meta`; a compile error below names one the list leaves out. */
const GATEWAY_OUTCOMES = [
  'executed',
  'replayed',
  'failed',
  'rejected',
  'denied',
  'ambiguous',
  'awaiting_approval',
  'running',
  'not_run',
  'unknown',
] as const satisfies readonly GatewayOutcome[];
const everyGatewayOutcomeListed: [Exclude<GatewayOutcome, (typeof GATEWAY_OUTCOMES)[number]>] extends [never] ? true : never = true;

describe('lists of outcomes', () => {
  /**
   * The paragraphs (prose and list items, code blocks left out) naming `executed`, `replayed` and another outcome: lists
   * of a job's outcomes. docs/gateway.md lists the gateway's own answers instead, held to them below.
   */
  const lists = pages
    .filter((page) => page !== 'docs/gateway.md')
    .flatMap((page) =>
      read(page)
        .replace(/^```[\s\S]*?^```$/gm, '')
        .split(/\n\s*\n|\n(?=\s*[-|] )/)
        .filter((paragraph) => JOB_OUTCOMES.filter((o) => paragraph.includes(`\`${o}\``)).length >= 3 && paragraph.includes('`replayed`'))
        .map((paragraph) => ({ page, paragraph })),
    );

  it('names every answer of the gateway where docs/gateway.md lists them', () => {
    expect(everyGatewayOutcomeListed).toBe(true);
    const list = read('docs/gateway.md')
      .split(/\n\s*\n/)
      .find((paragraph) => paragraph.includes('`_meta["bullmq-tool-receipts/outcome"]`'));
    for (const outcome of GATEWAY_OUTCOMES) expect(list, outcome).toContain(`\`${outcome}\``);
  });

  it('are found where the job result and the spans are described', () => {
    expect(everyOutcomeListed).toBe(true);
    expect(new Set(lists.map((l) => l.page))).toEqual(new Set(['README.md', 'docs/worker.md', 'docs/observability.md']));
  });

  it.each(lists.map((l) => [`${l.page}: ${l.paragraph.trim().slice(0, 60)}…`, l] as const))(
    '%s names every outcome',
    (_name, { page, paragraph }) => {
      for (const outcome of JOB_OUTCOMES) expect(paragraph, outcome).toContain(`\`${outcome}\``);
      // Where the result blocks are described, so are the parked turn's (a span of a parked call ends `waited` instead).
      if (page !== 'docs/observability.md') for (const outcome of PARKED_OUTCOMES) expect(paragraph, outcome).toContain(`\`${outcome}\``);
    },
  );
});

describe('code blocks that are example files', () => {
  const marked = pages.flatMap((page) =>
    [...read(page).matchAll(/^<!-- (examples\/[\w.-]+): [^\n]*-->\n```ts\n([\s\S]*?)^```$/gm)].map((m) => ({
      page,
      file: m[1]!,
      code: m[2]!,
    })),
  );

  it("include the front page's worker + producer and the testing example", () => {
    expect(marked.map((m) => `${m.page} ${m.file}`)).toEqual(
      expect.arrayContaining(['README.md examples/quickstart.ts', 'docs/testing.md examples/testing-a-processor.ts']),
    );
  });

  it.each(marked.map((m) => [`${m.page} → ${m.file}`, m] as const))('%s is the file, byte for byte', (_name, { file, code }) => {
    expect(code).toBe(read(file));
  });
});

describe('the API reference', () => {
  it('has a TypeDoc entry point for every subpath the package exports, and fails on any warning', () => {
    const { exports } = JSON.parse(read('package.json')) as { exports: Record<string, unknown> };
    const config = JSON.parse(read('typedoc.json')) as { entryPoints: string[]; treatWarningsAsErrors?: boolean; out: string };
    const wanted = Object.keys(exports)
      .filter((subpath) => subpath !== './package.json')
      .map((subpath) => (subpath === '.' ? 'src/index.ts' : `src/${subpath.slice(2)}/index.ts`));
    expect([...config.entryPoints].sort()).toEqual(wanted.sort());
    expect(config.treatWarningsAsErrors).toBe(true);
    expect(read('.gitignore').split('\n')).toContain(`${config.out}/`);
    // CI builds the reference (and checks the formatting) before the tests run.
    expect(read('.ci/run')).toMatch(/npm run typecheck\nnpm run lint\nnpm run docs\n/);
  });
});
