/** One receipt: every field, its steps, jobs and history, and what an operator can do about it. */
import { idempotencyKeyFor } from '../../core/identity.js';
import type { JobRetryReport } from '../../bullmq/sweep/retry-jobs.js';
import { isAmbiguousRecord, isApprovalStatus, isContestedRecord, type ReceiptRecord } from '../../redis/receipts/reads/record.js';
import { approvalFacts, isoTime } from '../../operator/labels.js';
import { html, type Html } from '../html.js';
import { banner, csrfField, href, page, prettyJson, runHref, stateBadge, time, type PageContext } from './layout.js';

/** What to say above the receipt after an action. */
export interface ReceiptNotice {
  readonly kind: 'error' | 'ok' | 'note';
  readonly text: string;
  readonly jobs?: readonly JobRetryReport[];
}

/** A field's value as markup: times as times, objects as JSON, the rest as text. */
function fieldValue(name: string, value: unknown, nowMs: number): Html {
  if (value === null || value === undefined) return html`<span class="muted">-</span>`;
  if (typeof value === 'number' && /Ms$/.test(name) && name !== 'ttlMs') {
    return html`${isoTime(value)} <span class="muted">(${time(value, nowMs)})</span>`;
  }
  if (typeof value === 'object') return html`<pre>${prettyJson(value)}</pre>`;
  return html`${String(value)}`;
}

/** The receipt's history, oldest first: what happened to each attempt, who said so, and when. */
function historyTable(record: ReceiptRecord): Html {
  if (record.history.length === 0) return html`<p class="muted" id="history-empty">No history recorded on this receipt.</p>`;
  return html`${record.historyDropped > 0 ? html`<p class="muted">${record.historyDropped} older entries were dropped.</p>` : ''}<div class="table-wrap"><table id="history"><thead><tr><th>#</th><th>When</th><th>What</th><th>Attempt</th><th>By</th><th>Note or error</th></tr></thead><tbody>
${record.history.map(
  (e) =>
    html`<tr><td>${e.seq}</td><td>${time(e.atMs, record.readAtMs)}</td><td>${e.what}${e.refused ? ' (refused)' : ''}</td><td>${e.attempt}</td><td>${e.by || '-'}</td><td>${e.note ?? ''}${e.error !== null ? html`<div class="mono">${e.error}</div>` : ''}</td></tr>`,
)}</tbody></table></div>`;
}

function resolveForms(ctx: PageContext, record: ReceiptRecord): Html {
  if (ctx.role !== 'operator') return html`<p class="muted">Read-only: an operator token is needed to resolve.</p>`;
  if (isContestedRecord(record)) {
    return html`<p>Contested: a claim reported attempt ${record.attempts} ambiguous, but the attempt has heartbeated since and may still settle. It cannot be resolved until it settles or its lease lapses.</p>`;
  }
  const fence = html`${csrfField(ctx)}<input type="hidden" name="key" value="${record.redisKey}">
<input type="hidden" name="attempts" value="${record.attempts}"><input type="hidden" name="epoch" value="${record.epoch}">`;
  return html`<p>Attempt ${record.attempts} of this ${record.effect} call lost its lease before completing. Check whether the effect happened, then settle it. The write is fenced on attempt ${record.attempts}${record.epoch ? html` (epoch <code>${record.epoch}</code>)` : ''}: if the receipt changes after this page was loaded, it is refused.</p>
<div class="cards">
<form class="card" method="post" action="${href(ctx, '/receipt/resolve')}" id="resolve-completed">${fence}
<input type="hidden" name="outcome" value="completed">
<h3>It happened: resolve as completed</h3>
<label>Result later claims replay (JSON; empty for no value)<textarea name="result" placeholder='{"sent": true}'></textarea></label>
<label>Note for the receipt's history (optional)<input type="text" name="note" maxlength="1000"></label>
<p><button type="submit">Resolve as completed</button></p>
</form>
<form class="card" method="post" action="${href(ctx, '/receipt/resolve')}" id="resolve-failed">${fence}
<input type="hidden" name="outcome" value="failed">
<h3>It did not happen: resolve as failed</h3>
<label>What you found (stored on the receipt)<textarea name="error" required></textarea></label>
<label>Note for the receipt's history (optional)<input type="text" name="note" maxlength="1000"></label>
<p><button type="submit" class="danger">Resolve as failed</button></p>
</form>
</div>`;
}

function retryForm(ctx: PageContext, record: ReceiptRecord): Html {
  if (
    record.jobs.length + record.metJobs.length === 0 ||
    record.status === 'running' ||
    isApprovalStatus(record.status) ||
    ctx.role !== 'operator'
  )
    return html``;
  return html`<form class="inline" method="post" action="${href(ctx, '/receipt/retry')}">${csrfField(ctx)}
<input type="hidden" name="key" value="${record.redisKey}">
<button type="submit" class="secondary">Retry the BullMQ job</button>
<span class="muted">Retries each failed job recorded on this receipt, so it replays this call and runs the rest of its turn.</span>
</form>`;
}

/** The call's approval, as its receipt records it; text only (a reason, a note or a redacted view may hold markup). */
function approvalSection(ctx: PageContext, record: ReceiptRecord): Html {
  const facts = approvalFacts(record);
  if (facts.length === 0) return html``;
  const decide =
    record.status === 'awaiting_approval'
      ? html`<p>The call has not run. Decide it on <a href="${href(ctx, '/approvals', { tenant: record.key.tenantId })}">Needs approval</a>.</p>`
      : html``;
  return html`<h2>Approval</h2>${decide}<div class="table-wrap"><table class="fields" id="approval"><tbody>${facts.map(
    ([label, value]) => html`<tr><th>${label}</th><td>${value}</td></tr>`,
  )}</tbody></table></div>`;
}

function jobReport(jobs: readonly JobRetryReport[] | undefined): Html {
  if (jobs === undefined) return html``;
  if (jobs.length === 0) return html`<p>No BullMQ job is recorded on this receipt; nothing was retried.</p>`;
  return html`<ul>${jobs.map(
    ({ job, action }) =>
      html`<li>Job <code>${job.id}</code> of queue <code>${job.queue}</code> (prefix <code>${job.prefix}</code>): ${action === 'retried' ? 'retried' : `left alone, it is ${action}`}</li>`,
  )}</ul>`;
}

export function receiptPageView(ctx: PageContext, record: ReceiptRecord, notice?: ReceiptNotice): Html {
  const now = record.readAtMs;
  const steps = Object.entries(record.steps);
  const fields = Object.entries(record).filter(([name]) => !['key', 'steps', 'jobs', 'metJobs', 'history', 'approval'].includes(name));
  return page(ctx, 'Receipt', '', [
    notice ? html`${banner(notice.kind, notice.text)}${jobReport(notice.jobs)}` : html``,
    html`<div class="table-wrap"><table class="fields"><tbody>
<tr><th>State</th><td>${stateBadge(record)}</td></tr>
<tr><th>Tenant</th><td>${record.key.tenantId}</td></tr>
<tr><th>Run</th><td><a href="${runHref(ctx, record.key.tenantId, record.key.runId)}">${record.key.runId}</a></td></tr>
<tr><th>Tool</th><td>${record.key.toolName}</td></tr>
<tr><th>Args hash</th><td class="mono">${record.key.argsHash}</td></tr>
<tr><th>Attempts</th><td>${record.attempts}</td></tr>
<tr><th>Idempotency key</th><td class="mono">${idempotencyKeyFor(record.key)}</td></tr>
<tr><th>Redis key</th><td class="mono key">${record.redisKey}</td></tr>
</tbody></table></div>`,
    isAmbiguousRecord(record) ? html`<h2>Resolve</h2>${resolveForms(ctx, record)}` : html``,
    approvalSection(ctx, record),
    retryForm(ctx, record),
    html`<h2>Every field</h2><div class="table-wrap"><table class="fields"><tbody>${fields.map(
      ([name, value]) => html`<tr><th>${name}</th><td>${fieldValue(name, value, now)}</td></tr>`,
    )}</tbody></table></div>`,
    html`<h2>Steps</h2>${
      steps.length === 0
        ? html`<p class="muted">No step recorded.</p>`
        : html`<div class="table-wrap"><table class="fields"><tbody>${steps.map(([name, value]) => html`<tr><th>${name}</th><td><pre>${prettyJson(value)}</pre></td></tr>`)}</tbody></table></div>`
    }`,
    html`<h2>Jobs</h2>${
      record.jobs.length + record.metJobs.length === 0
        ? html`<p class="muted">No BullMQ job recorded.</p>`
        : html`<ul>${record.jobs.map((j) => html`<li>Attempt ${j.attempt}: job <code>${j.id}</code> of queue <code>${j.queue}</code> (prefix <code>${j.prefix}</code>)</li>`)}
${record.metJobs.map((j) => html`<li>Met it ambiguous: job <code>${j.id}</code> of queue <code>${j.queue}</code> (prefix <code>${j.prefix}</code>)</li>`)}</ul>`
    }`,
    html`<h2>History</h2>${historyTable(record)}`,
  ]);
}
