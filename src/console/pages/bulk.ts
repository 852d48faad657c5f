/** Bulk resolve by filter: the filter, the exact preview, the confirmation, the progress, and the history. */
import type { AuditEntry } from '../../redis/operators/audit-log.js';
import { duration } from '../../operator/labels.js';
import { html, type Html } from '../html.js';
import { MAX_BULK_RECEIPTS, type BulkDraft, type BulkJob } from '../bulk.js';
import { auditTable } from './audit.js';
import { banner, csrfField, href, page, receiptHref, type PageContext } from './layout.js';
import { filterForm, type NeedsFilterForm } from './needs.js';

const FIRST = 20;

function previewView(ctx: PageContext, draft: BulkDraft): Html {
  const count = draft.entries.length;
  const first = draft.entries.slice(0, FIRST);
  const confirm =
    ctx.role !== 'operator'
      ? html`<p class="muted">Read-only: an operator token is needed to resolve.</p>`
      : count === 0
        ? html``
        : html`<form class="card" method="post" action="${href(ctx, '/bulk/start')}" id="bulk-confirm">${csrfField(ctx)}
<input type="hidden" name="draft" value="${draft.id}">
<h3>Resolve these ${count} receipts</h3>
<label>Name of this action (kept in the history) <input type="text" name="name" required maxlength="200"></label>
<p><label><span><input type="radio" name="outcome" value="failed" checked> failed: the effect did not happen (the next claim runs the call again)</span></label>
<label><span><input type="radio" name="outcome" value="completed"> completed: the effect happened (later claims replay the result)</span></label></p>
<label>With failed: what you found <input type="text" name="error"></label>
<label>With completed: the result (JSON; empty for no value)<textarea name="result"></textarea></label>
<p><label><span><input type="checkbox" name="confirm" value="yes" required> I checked these ${count} effects</span></label></p>
<p><button type="submit" class="danger">Resolve ${count} receipts</button></p>
</form>`;
  return html`<section id="bulk-preview">
<p><strong id="bulk-count">${count}</strong> receipt${count === 1 ? '' : 's'} match${count === 1 ? 'es' : ''} and can be resolved now.${
    draft.leftOut > 0
      ? html` ${draft.leftOut} more matched beyond the limit of ${MAX_BULK_RECEIPTS} per action: run another action after this one.`
      : ''
  } Each will be resolved with the attempts and epoch seen now; one that changes before its turn is skipped and listed.</p>
${
  count > 0
    ? html`<div class="table-wrap"><table><thead><tr><th>Tenant</th><th>Run</th><th>Tool</th><th>Attempts</th><th>Age</th><th></th></tr></thead><tbody>
${first.map((e) => html`<tr><td>${e.tenantId}</td><td>${e.runId}</td><td>${e.toolName}</td><td>${e.attempts}</td><td>${duration(draft.readAtMs - e.sinceMs)}</td><td><a href="${receiptHref(ctx, e.redisKey)}">open</a></td></tr>`)}
</tbody></table></div>${count > FIRST ? html`<p class="muted">The first ${FIRST} of ${count}.</p>` : ''}`
    : ''
}
${confirm}
</section>`;
}

export function bulkPageView(
  ctx: PageContext,
  form: NeedsFilterForm,
  draft: BulkDraft | undefined,
  history: readonly AuditEntry[],
  nowMs: number,
  problem?: string,
): Html {
  return page(ctx, 'Bulk resolve', '/bulk', [
    html`<p class="muted">Choose a filter, look at the exact count and the first matches, name the action and confirm.</p>`,
    filterForm(ctx, '/bulk', form, 'Preview', html`<input type="hidden" name="preview" value="1">`),
    problem ? banner('error', problem) : html``,
    draft ? previewView(ctx, draft) : html``,
    html`<h2>History</h2>`,
    auditTable(ctx, history, nowMs),
  ]);
}

export function bulkJobView(ctx: PageContext, job: BulkJob): Html {
  const total = job.draft.entries.length;
  return page(
    ctx,
    `Bulk resolve: ${job.name}`,
    '/bulk',
    [
      job.error ? banner('error', `Stopped: ${job.error}`) : html``,
      html`<p id="bulk-status" data-finished="${job.finished ? 'yes' : 'no'}">${job.finished ? 'Done' : 'Resolving'}: <strong id="bulk-done">${job.done}</strong> of ${total}; <strong id="bulk-resolved">${job.resolved.length}</strong> resolved as ${job.outcome}, <strong id="bulk-skipped">${job.skipped.length}</strong> skipped.</p>
<progress class="progress" max="${Math.max(total, 1)}" value="${job.done}"></progress>`,
      job.skipped.length > 0
        ? html`<h2>Skipped (changed since the preview)</h2><div class="table-wrap"><table id="bulk-skipped-list"><tbody>${job.skipped.map(
            (s) => html`<tr><td class="mono key"><a href="${receiptHref(ctx, s.redisKey)}">${s.redisKey}</a></td><td>${s.why}</td></tr>`,
          )}</tbody></table></div>`
        : html``,
      job.finished
        ? html`<p><a href="${href(ctx, '/bulk')}">Back to bulk resolve and its history</a></p>`
        : html`<p class="muted">This page reloads every second until the action is done.</p>`,
    ],
    job.finished ? {} : { refreshSeconds: 1 },
  );
}
