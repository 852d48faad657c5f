/** "Needs a person": the ambiguous receipts, oldest first, filtered and paged from the ambiguous index. */
import { duration } from '../../operator/labels.js';
import { html, type Html } from '../html.js';
import { cursorText, lostAttemptJob, type NeedsPage } from '../queries.js';
import { href, page, receiptHref, runHref, type PageContext } from './layout.js';

/** The filters as the query string carries them. */
export interface NeedsFilterForm {
  readonly tenant?: string;
  readonly tool?: string;
  readonly age?: string;
}

/** What the filter's ids hold that an eye misses: spaces around them, which the filter keeps (ids are matched exactly). */
function spacedIds(form: NeedsFilterForm): Html {
  const spaced = (['tenant', 'tool'] as const).filter((name) => {
    const value = form[name];
    return value !== undefined && value !== value.trim();
  });
  return html`${spaced.map(
    (name) =>
      html`<p class="muted exact-id">The ${name} <code>${JSON.stringify(form[name])}</code> has spaces around it: receipts are filtered by the exact id, spaces included.</p>`,
  )}`;
}

/** The filter form shared by this page and the bulk page. */
export function filterForm(ctx: PageContext, path: string, form: NeedsFilterForm, submit: string, extra?: Html): Html {
  return html`${spacedIds(form)}<form class="filters" method="get" action="${href(ctx, path)}">
<label>Tenant <input type="text" name="tenant" value="${form.tenant ?? ''}"></label>
<label>Tool <input type="text" name="tool" value="${form.tool ?? ''}"></label>
<label>Ambiguous for at least <input type="text" name="age" placeholder="15m, 2h, 1d" value="${form.age ?? ''}" size="8"></label>
${extra}
<button type="submit">${submit}</button>
</form>`;
}

function reconciled(verdict: string | undefined): Html {
  return verdict === undefined ? html`<span class="muted">-</span>` : html`${verdict}`;
}

export function needsPageView(ctx: PageContext, form: NeedsFilterForm, data: NeedsPage, problem?: string): Html {
  const rows = data.rows.map(({ entry, record }) => {
    const job = record ? lostAttemptJob(record) : undefined;
    const verdict = record?.reconciled && record.reconciled.attempt === record.attempts ? record.reconciled.verdict : undefined;
    return html`<tr>
<td>${entry.tenantId}</td>
<td><a href="${runHref(ctx, entry.tenantId, entry.runId)}">${entry.runId}</a></td>
<td><a href="${receiptHref(ctx, entry.redisKey)}">${entry.toolName}</a></td>
<td class="hide-narrow">${record ? record.attempts : '-'}</td>
<td><span title="since ${new Date(entry.sinceMs).toISOString()}">${duration(data.readAtMs - entry.sinceMs)}</span></td>
<td class="mono hide-narrow">${record?.owner ?? '-'}</td>
<td class="mono hide-narrow">${job ? `${job.queue} #${job.id}` : '-'}</td>
<td class="hide-narrow">${reconciled(verdict)}</td>
<td class="hide-narrow"><a href="${receiptHref(ctx, entry.redisKey)}">open</a></td>
</tr>`;
  });
  const count = data.total === 1 ? '1 receipt needs a person' : `${data.total.toLocaleString('en-US')} receipts need a person`;
  const params = { tenant: form.tenant, tool: form.tool, age: form.age };
  return page(ctx, 'Needs a person', '/', [
    html`<p class="muted">Opaque calls whose attempt lost its lease before completing: nobody knows whether the effect happened. Check the effect, then resolve each one. Oldest first.</p>`,
    filterForm(ctx, '/', form, 'Filter'),
    problem ? html`<div class="banner error" role="alert">${problem}</div>` : html``,
    html`<p><strong>${count}</strong>${form.tenant || form.tool || form.age ? ' (filtered)' : ''}. <span class="muted">Read from ${data.runs.toLocaleString('en-US')} registered runs' counting sets.</span></p>`,
    data.total === 0
      ? html`<p>Nothing to settle.</p>`
      : html`<div class="table-wrap"><table>
<thead><tr><th>Tenant</th><th>Run</th><th>Tool</th><th class="hide-narrow">Attempts</th><th>Age</th><th class="hide-narrow">Lost attempt's owner</th><th class="hide-narrow">Job</th><th class="hide-narrow">Reconcile</th><th class="hide-narrow"></th></tr></thead>
<tbody>${rows}</tbody></table></div>`,
    html`<div class="pager">${data.next ? html`<a href="${href(ctx, '/', { ...params, after: cursorText(data.next) })}">Next ${'\u2192'}</a>` : ''}
${data.total > 0 ? html`<a href="${href(ctx, '/bulk', params)}">Bulk resolve these…</a>` : ''}</div>`,
  ]);
}
