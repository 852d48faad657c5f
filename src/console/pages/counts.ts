/** Counts: the `stats` figures for the whole prefix and per tenant, from the counting sets, the calls awaiting approval, each limit's used and left, and each in-flight cap's slots. */
import type { PendingApprovalCount } from '../../approvals/read.js';
import type { CapCount } from '../../limits/cap-counts.js';
import type { LimitCount } from '../../limits/limit-counts.js';
import type { ReceiptStats } from '../../redis/runs/counts.js';
import { html, type Html } from '../html.js';
import { href, page, time, type PageContext } from './layout.js';

const n = (value: number) => value.toLocaleString('en-US');

function row(ctx: PageContext, label: Html, s: ReceiptStats, awaiting: number): Html {
  return html`<tr><td>${label}</td><td>${n(s.total)}</td><td>${n(s.runs)}</td><td>${n(s.byStatus.running)}</td><td>${n(s.byStatus.completed)}</td><td>${n(s.byStatus.failed)}</td>
<td>${s.ambiguous > 0 ? html`<a href="${href(ctx, '/', { tenant: s.tenantId })}">${n(s.ambiguous)}</a>` : '0'}</td><td class="hide-narrow">${time(s.oldestAmbiguousSinceMs, s.readAtMs)}</td>
<td>${awaiting > 0 ? html`<a href="${href(ctx, '/approvals', { tenant: s.tenantId })}">${n(awaiting)}</a>` : '0'}</td></tr>`;
}

/** The line under the table about calls awaiting approval, as `tool-receipts stats` gives them. */
function approvalsLine(ctx: PageContext, pending: PendingApprovalCount): Html {
  if (pending.count === 0) return html`<p class="muted" id="awaiting-approval">No call awaits approval.</p>`;
  return html`<p id="awaiting-approval">Awaiting approval: ${pending.complete ? '' : 'at least '}<a href="${href(ctx, '/approvals')}">${n(pending.count)}</a>${
    pending.soonestExpiresAtMs === null ? '' : html`, the soonest expires ${time(pending.soonestExpiresAtMs, pending.readAtMs)}`
  } <span class="muted">(not run yet, so in none of the columns before it)</span>.</p>`;
}

/** The limit counts shown at most; the CLI's `tool-receipts limits` lists them all. */
const LIMITS_SHOWN = 200;

const whose = (c: LimitCount | CapCount) =>
  c.per === 'global'
    ? html`<span class="muted">all tenants</span>`
    : c.per === 'tenant'
      ? html`${c.tenantId}`
      : html`${c.tenantId} / ${c.runId}`;

/** The in-flight caps: slots held of k, calls waiting, and when the earliest lease passes. */
function capsTable(caps: readonly CapCount[]): Html {
  if (caps.length === 0) return html``;
  return html`<h2>In-flight caps</h2><p class="muted">The slots each cap's calls hold by live leases (of k), the calls waiting in line for one, and when the earliest lease passes if its holder stops renewing, on the server clock.</p>
<div class="table-wrap"><table><thead><tr><th>Cap</th><th>Per</th><th>Whose</th><th>Held</th><th>Waiting</th><th class="hide-narrow">Next lapse</th></tr></thead><tbody>
${caps.slice(0, LIMITS_SHOWN).map((c) => html`<tr><td>${c.name}</td><td>${c.per}</td><td>${whose(c)}</td><td>${n(c.cap.held)}/${n(c.cap.concurrency)}</td><td>${n(c.cap.waiting)}</td><td class="hide-narrow">${c.cap.nextLapseMs === null ? html`<span class="muted">-</span>` : time(c.cap.nextLapseMs, c.cap.nowMs)}</td></tr>`)}</tbody></table></div>`;
}

function limitsTable(limits: readonly LimitCount[]): Html {
  if (limits.length === 0) return html`<h2>Limits</h2><p class="muted">No limit has counted a call under this prefix.</p>`;
  return html`<h2>Limits</h2><p class="muted">What each limit's current window has used (committed, and held by reservations whose calls may be about to run) and has left, when its next committed unit frees and when all are free, on the server clock.</p>
<div class="table-wrap"><table><thead><tr><th>Limit</th><th>Per</th><th>Whose</th><th>Kind</th><th>Used</th><th>Left</th><th>Max</th><th class="hide-narrow">Next free</th><th class="hide-narrow">All free</th></tr></thead><tbody>
${limits.slice(0, LIMITS_SHOWN).map((c) => html`<tr><td>${c.name}</td><td>${c.per}</td><td>${whose(c)}</td><td>${c.usage.kind === 'bucket' ? `bucket (burst ${n(c.usage.capacity)})` : c.usage.kind}</td><td>${n(c.usage.used)}</td><td>${n(c.usage.left)}</td><td>${n(c.usage.max)}</td><td class="hide-narrow">${c.usage.nextFreeAtMs === null ? html`<span class="muted">-</span>` : time(c.usage.nextFreeAtMs, c.usage.nowMs)}</td><td class="hide-narrow">${time(c.usage.resetsAtMs, c.usage.nowMs)}</td></tr>`)}</tbody></table></div>
${limits.length > LIMITS_SHOWN ? html`<p class="muted">Showing ${LIMITS_SHOWN} of ${n(limits.length)} counts; tool-receipts limits lists them all.</p>` : html``}`;
}

export function countsPageView(
  ctx: PageContext,
  all: ReceiptStats,
  byTenant: readonly ReceiptStats[],
  shown: number,
  limits: readonly LimitCount[] = [],
  pending: PendingApprovalCount = { count: 0, byTenant: {}, soonestExpiresAtMs: null, complete: true, readAtMs: all.readAtMs },
  caps: readonly CapCount[] = [],
  /** No run is registered under the prefix: nothing was counted. */
  noRuns = false,
): Html {
  const awaiting = (s: ReceiptStats) => (s.tenantId === undefined ? pending.count : (pending.byTenant[s.tenantId] ?? 0));
  return page(ctx, 'Counts', '/counts', [
    noRuns
      ? html`<p class="muted">No run is registered under this prefix, so nothing is counted here. Receipts an earlier release wrote are counted by <code>tool-receipts stats --scan</code>, which walks the keyspace.</p>`
      : html`<p class="muted">Live receipts by status, and the ambiguous ones, exact, from each run's counting set (no receipt read).</p>`,
    html`<div class="table-wrap"><table><thead><tr><th>Tenant</th><th>Receipts</th><th>Runs</th><th>Running</th><th>Completed</th><th>Failed</th><th>Ambiguous</th><th class="hide-narrow">Oldest ambiguous</th><th>Awaiting approval</th></tr></thead>
<tbody>${row(ctx, html`<strong>All tenants</strong>`, all, awaiting(all))}${byTenant.map((s) => row(ctx, html`${s.tenantId}`, s, awaiting(s)))}</tbody></table></div>`,
    approvalsLine(ctx, pending),
    byTenant.length < shown ? html`` : html`<p class="muted">Showing the ${byTenant.length} tenants with the most receipts.</p>`,
    html`<h2>By status and effect</h2><div class="table-wrap"><table><thead><tr><th>Status</th><th>Effect</th><th>Receipts</th></tr></thead><tbody>
${all.byStatusAndEffect.map((c) => html`<tr><td>${c.status}</td><td>${c.effect}</td><td>${n(c.count)}</td></tr>`)}</tbody></table></div>`,
    limitsTable(limits),
    capsTable(caps),
  ]);
}
