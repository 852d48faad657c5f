/** The audit log: every write an operator made, newest first. */
import type { AuditEntry } from '../../redis/operators/audit-log.js';
import { html, type Html } from '../html.js';
import { href, page, receiptHref, time, type PageContext } from './layout.js';

function detail(entry: AuditEntry): Html {
  const d = entry.detail;
  const parts: Html[] = [];
  for (const [name, value] of Object.entries(d)) {
    if (name === 'skipped' && Array.isArray(value)) {
      parts.push(
        html`<div>skipped ${value.length}: ${value.slice(0, 20).map((s) => html`<div class="mono">${JSON.stringify(s)}</div>`)}</div>`,
      );
      continue;
    }
    parts.push(html`<div><span class="muted">${name}</span> ${typeof value === 'string' ? value : JSON.stringify(value)}</div>`);
  }
  return html`${parts}`;
}

/** The audit entries as a table (the audit page and the bulk page's history). */
export function auditTable(ctx: PageContext, entries: readonly AuditEntry[], nowMs: number): Html {
  if (entries.length === 0) return html`<p class="muted">Nothing recorded yet.</p>`;
  return html`<div class="table-wrap"><table class="audit"><thead><tr><th>When</th><th>Who</th><th>From</th><th>What</th><th>Receipts</th><th>Detail</th></tr></thead><tbody>
${entries.map(
  (e) => html`<tr data-id="${e.id}"><td>${time(e.atMs, nowMs)}</td><td>${e.actor}</td><td>${e.source}</td><td>${e.action}</td>
<td>${e.receipts.length} ${e.receipts.slice(0, 5).map((k) => html`<div class="mono key"><a href="${receiptHref(ctx, k)}">${k}</a></div>`)}${e.receipts.length > 5 ? html`<div class="muted">…</div>` : ''}</td>
<td>${detail(e)}</td></tr>`,
)}</tbody></table></div>`;
}

export function auditPageView(ctx: PageContext, entries: readonly AuditEntry[], nowMs: number, more: string | undefined): Html {
  return page(ctx, 'Audit log', '/audit', [
    html`<p class="muted">Every resolve, bulk resolve and job retry, from this console and from the CLI (<code>tool-receipts audit</code> prints the same), newest first. Kept in a capped Redis stream under the prefix.</p>`,
    auditTable(ctx, entries, nowMs),
    more ? html`<div class="pager"><a href="${href(ctx, '/audit', { before: more })}">Older ${'\u2192'}</a></div>` : html``,
  ]);
}
