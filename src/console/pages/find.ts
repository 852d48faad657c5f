/** Find: one box, every kind of identifier it could be, each looked up by its own index. */
import { html, type Html } from '../html.js';
import type { FindGroup } from '../queries.js';
import { banner, href, page, receiptHref, runHref, stateBadge, type PageContext } from './layout.js';

export function findPageView(ctx: PageContext, q: string, groups: readonly FindGroup[] | undefined, problem?: string): Html {
  const results =
    groups === undefined
      ? html``
      : groups.length === 0
        ? html`<p id="find-nothing">Nothing found for <code>${q}</code>.</p>`
        : groups.map(
            (g) => html`<section class="card find-group" data-kind="${g.kind}">
<h3>As a ${g.kind}</h3>
<p class="muted">${g.how}</p>
${g.notes.map((n) => html`<p>${n}</p>`)}
${g.receipts.length > 0 ? html`<ul>${g.receipts.map((r) => html`<li>${stateBadge(r)} <a href="${receiptHref(ctx, r.redisKey)}">${r.key.toolName}</a> in run <a href="${runHref(ctx, r.key.tenantId, r.key.runId)}">${r.key.runId}</a> of tenant ${r.key.tenantId}, attempt ${r.attempts}</li>`)}</ul>` : ''}
${g.runs.length > 0 ? html`<ul>${g.runs.map((r) => html`<li>Run <a href="${runHref(ctx, r.tenantId, r.runId)}">${r.runId}</a> of tenant ${r.tenantId}</li>`)}</ul>` : ''}
</section>`,
          );
  return page(ctx, 'Find', '/find', [
    html`<form class="filters" method="get" action="${href(ctx, '/find')}">
<label>Receipt key, run key, BullMQ job id or key, idempotency key, call id, tenant, run or tool
<input type="search" class="wide" name="q" value="${q}" autofocus></label>
<button type="submit">Find</button></form>`,
    html`<p class="muted">A receipt key or run key is read directly; an idempotency key is compared with the receipts that need a person; a job id in the configured queues (or a pasted <code>&lt;prefix&gt;:&lt;queue&gt;:&lt;id&gt;</code> job key); a tenant or a run in the run registry; when nothing else matched, a tool or a call id among the receipts that need a person.</p>`,
    problem ? banner('error', problem) : html``,
    html`<div class="cards">${results}</div>`,
  ]);
}
