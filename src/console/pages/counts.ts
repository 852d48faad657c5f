/** Counts: the `stats` figures for the whole prefix and per tenant, from the counting sets. */
import type { ReceiptStats } from '../../redis/runs/counts.js';
import { html, type Html } from '../html.js';
import { href, page, time, type PageContext } from './layout.js';

const n = (value: number) => value.toLocaleString('en-US');

function row(ctx: PageContext, label: Html, s: ReceiptStats): Html {
  return html`<tr><td>${label}</td><td>${n(s.total)}</td><td>${n(s.runs)}</td><td>${n(s.byStatus.running)}</td><td>${n(s.byStatus.completed)}</td><td>${n(s.byStatus.failed)}</td>
<td>${s.ambiguous > 0 ? html`<a href="${href(ctx, '/', { tenant: s.tenantId })}">${n(s.ambiguous)}</a>` : '0'}</td><td class="hide-narrow">${time(s.oldestAmbiguousSinceMs, s.readAtMs)}</td></tr>`;
}

export function countsPageView(ctx: PageContext, all: ReceiptStats, byTenant: readonly ReceiptStats[], shown: number): Html {
  return page(ctx, 'Counts', '/counts', [
    html`<p class="muted">Live receipts by status, and the ambiguous ones, exact, from each run's counting set (${all.readBy === 'scan' ? 'read by walking the receipts: no run is registered' : 'no receipt read'}).</p>`,
    html`<div class="table-wrap"><table><thead><tr><th>Tenant</th><th>Receipts</th><th>Runs</th><th>Running</th><th>Completed</th><th>Failed</th><th>Ambiguous</th><th class="hide-narrow">Oldest ambiguous</th></tr></thead>
<tbody>${row(ctx, html`<strong>All tenants</strong>`, all)}${byTenant.map((s) => row(ctx, html`${s.tenantId}`, s))}</tbody></table></div>`,
    byTenant.length < shown ? html`` : html`<p class="muted">Showing the ${byTenant.length} tenants with the most receipts.</p>`,
    html`<h2>By status and effect</h2><div class="table-wrap"><table><thead><tr><th>Status</th><th>Effect</th><th>Receipts</th></tr></thead><tbody>
${all.byStatusAndEffect.map((c) => html`<tr><td>${c.status}</td><td>${c.effect}</td><td>${n(c.count)}</td></tr>`)}</tbody></table></div>`,
  ]);
}
