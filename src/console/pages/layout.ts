/** The frame every page shares, links between pages, and small pieces of markup. */
import type { ReceiptRecord } from '../../redis/receipts/reads/record.js';
import { isoTime, relative, stateLabel } from '../../operator/labels.js';
import { html, type Html } from '../html.js';
import type { ConsoleRole } from '../security.js';

/** What every page needs to know about the request. */
export interface PageContext {
  /** The path the console is mounted at, without a trailing slash (`''` at the root). */
  readonly base: string;
  readonly role: ConsoleRole;
  /** The CSRF token every form echoes. */
  readonly csrf: string;
  /** The receipts' key prefix. */
  readonly prefix: string;
}

/** A console URL: `path` under the mount point with `params` (empty ones left out) as its query. */
export function href(ctx: Pick<PageContext, 'base'>, path: string, params: Record<string, string | number | undefined> = {}): string {
  const query = new URLSearchParams();
  for (const [name, value] of Object.entries(params)) if (value !== undefined && value !== '') query.set(name, String(value));
  const text = query.toString();
  return `${ctx.base}${path}${text === '' ? '' : `?${text}`}`;
}

export const receiptHref = (ctx: PageContext, redisKey: string) => href(ctx, '/receipt', { key: redisKey });
export const runHref = (ctx: PageContext, tenantId: string, runId: string) => href(ctx, '/run', { tenant: tenantId, run: runId });

/** How the header names each role. */
const ROLE_LABELS: Readonly<Record<ConsoleRole, string>> = { operator: 'operator', approver: 'approver', read: 'read-only' };

const NAV: readonly [path: string, label: string][] = [
  ['/', 'Needs a person'],
  ['/approvals', 'Needs approval'],
  ['/find', 'Find'],
  ['/bulk', 'Bulk resolve'],
  ['/counts', 'Counts'],
  ['/audit', 'Audit log'],
];

/** A whole page. `current` is the nav entry to mark. */
export function page(
  ctx: PageContext,
  title: string,
  current: string,
  body: Html | Html[],
  options: { refreshSeconds?: number } = {},
): Html {
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
${options.refreshSeconds !== undefined ? html`<meta http-equiv="refresh" content="${options.refreshSeconds}">` : ''}
<title>${title} · tool-receipts console</title>
<link rel="stylesheet" href="${href(ctx, '/console.css')}">
</head>
<body>
<header class="top">
<a class="brand" href="${href(ctx, '/')}">tool-receipts</a>
<nav>${NAV.map(([path, label]) => html`<a href="${href(ctx, path)}"${path === current ? html` aria-current="page"` : ''}>${label}</a>`)}</nav>
<span class="who">prefix <code>${ctx.prefix}</code> · ${ROLE_LABELS[ctx.role]}</span>
</header>
<main>
<h1>${title}</h1>
${body}
</main>
</body>
</html>
`;
}

/** A server time with its distance from `nowMs`: `2025-06-01T12:00:03Z` titled, `4m12s ago` shown. */
export function time(at: number | null, nowMs: number): Html {
  if (at === null) return html`<span class="muted">-</span>`;
  return html`<time datetime="${new Date(at).toISOString()}" title="${isoTime(at)}">${relative(at, nowMs)}</time>`;
}

/** A receipt's state as a coloured badge. */
export function stateBadge(record: ReceiptRecord): Html {
  const label = stateLabel(record);
  const kind = label.startsWith('ambiguous') ? 'ambiguous' : record.status;
  return html`<span class="badge ${kind}">${label.replace(/ \(contested:.*\)$/, ' (contested)')}</span>`;
}

/** A message box: `error` for refusals, `ok` for what was done, `note` for anything else. */
export function banner(kind: 'error' | 'ok' | 'note', text: Html | string): Html {
  return html`<div class="banner ${kind}" role="${kind === 'error' ? 'alert' : 'status'}">${text}</div>`;
}

/** The hidden CSRF field of a form. */
export function csrfField(ctx: Pick<PageContext, 'csrf'>): Html {
  return html`<input type="hidden" name="csrf" value="${ctx.csrf}">`;
}

/** A value as pretty JSON text (escaped by the caller's template). */
export function prettyJson(value: unknown): string {
  if (value === undefined) return '(no value)';
  try {
    return JSON.stringify(value, null, 2) ?? String(value);
  } catch {
    return String(value);
  }
}
