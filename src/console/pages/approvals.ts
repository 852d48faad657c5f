/**
 * "Needs approval": the calls waiting for a person, soonest to expire first,
 * each with what the approver may see of its arguments and, for a role that
 * may decide, one form to approve or deny it with a note.
 */
import type { PendingApproval } from '../../approvals/types.js';
import type { ShownArguments } from '../../operator/approvals.js';
import { isoTime } from '../../operator/labels.js';
import { html, type Html } from '../html.js';
import { mayDecideApprovals } from '../security.js';
import { banner, csrfField, href, page, prettyJson, runHref, time, type PageContext } from './layout.js';

/** One call awaiting approval, with what its approver is shown. */
export interface ApprovalRow {
  readonly pending: PendingApproval;
  readonly shown: ShownArguments;
}

/** What to say above the list after a decision, or a refused one. */
export interface ApprovalNotice {
  readonly kind: 'error' | 'ok';
  readonly text: string;
}

/** The arguments as the approver sees them; always text, never markup (the template escapes them). */
function argumentsBlock(shown: ShownArguments): Html {
  switch (shown.from) {
    case 'redacted':
      return html`<p class="muted">Arguments as the tool's redact hook shows them:</p><pre class="arguments">${prettyJson(shown.value)}</pre>`;
    case 'job':
      return html`<p class="muted">Arguments of call <code>${shown.callId}</code> in its BullMQ job${shown.checked ? '' : ' (the only call of this tool there; its digest could not be recomputed here)'}:</p><pre class="arguments">${prettyJson(shown.value)}</pre>`;
    case 'none':
      return html`<p class="muted">No arguments to show: ${shown.why}.</p>`;
  }
}

function decisionForm(ctx: PageContext, p: PendingApproval): Html {
  if (!mayDecideApprovals(ctx.role)) return html`<p class="muted">Read-only: an approver or operator token is needed to decide.</p>`;
  return html`<form method="post" action="${href(ctx, '/approvals/decide')}" class="decide">${csrfField(ctx)}
<input type="hidden" name="key" value="${p.receiptKey}"><input type="hidden" name="epoch" value="${p.epoch}"><input type="hidden" name="args" value="${p.argsHash}">
<label>Note (kept on the receipt; after a denial the model reads it)<input type="text" name="note" maxlength="1000"></label>
<p><button type="submit" name="decision" value="approve">Approve: run it once</button> <button type="submit" name="decision" value="deny" class="danger">Deny: never run it</button></p>
</form>`;
}

function approvalCard(ctx: PageContext, row: ApprovalRow, nowMs: number): Html {
  const p = row.pending;
  return html`<section class="card approval">
<h3>${p.toolName} <span class="muted">for</span> ${p.tenantId} <span class="muted">run</span> <a href="${runHref(ctx, p.tenantId, p.runId)}">${p.runId}</a></h3>
<table class="fields"><tbody>
<tr><th>Reason</th><td>${p.reason ?? html`<span class="muted">none given: the tool always asks</span>`}</td></tr>
<tr><th>Asked</th><td>${time(p.requestedAtMs, nowMs)}</td></tr>
<tr><th>Expires</th><td>${isoTime(p.expiresAtMs)} (${time(p.expiresAtMs, nowMs)}); then it counts as denied</td></tr>
<tr><th>Job</th><td class="mono">${p.job ? `${p.job.queue} #${p.job.id}` : (p.jobId ?? '-')}</td></tr>
<tr><th>Receipt</th><td class="key mono">${p.receiptKey}</td></tr>
</tbody></table>
${argumentsBlock(row.shown)}
${decisionForm(ctx, p)}
</section>`;
}

/** The page. `tenant` is the filter as given (an id, matched exactly). */
export function approvalsPageView(
  ctx: PageContext,
  rows: readonly ApprovalRow[],
  nowMs: number,
  tenant: string | undefined,
  notice?: ApprovalNotice,
): Html {
  const count = rows.length === 1 ? '1 call awaits approval' : `${rows.length.toLocaleString('en-US')} calls await approval`;
  return page(ctx, 'Needs approval', '/approvals', [
    html`<p class="muted">Calls a tool's approval rule held back: nothing has run. Approve one and its job runs it exactly once; deny it and it never runs. Soonest to expire first.</p>`,
    notice ? banner(notice.kind, notice.text) : html``,
    html`<form class="filters" method="get" action="${href(ctx, '/approvals')}"><label>Tenant <input type="text" name="tenant" value="${tenant ?? ''}"></label><button type="submit">Filter</button></form>`,
    html`<p><strong>${count}</strong>${tenant !== undefined ? ' (filtered)' : ''}.</p>`,
    rows.length === 0
      ? html`<p>Nothing to decide.</p>`
      : html`<div class="cards">${rows.map((row) => approvalCard(ctx, row, nowMs))}</div>`,
  ]);
}
