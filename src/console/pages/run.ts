/** A run: its receipts on a time axis (created to settled: running, then ambiguous once an attempt was lost, capped by the final status; takeovers marked) and its resume note. */
import { isAmbiguousRecord, isApprovalStatus, type ReceiptRecord } from '../../redis/receipts/reads/record.js';
import type { RunReport } from '../../operator/run-report.js';
import { duration, isoTime } from '../../operator/labels.js';
import { html, type Html } from '../html.js';
import { HttpProblem } from '../forms.js';
import { href, page, receiptHref, stateBadge, time, type PageContext } from './layout.js';

/** The most receipts the run page shows at once; a longer run is paged, oldest first. */
export const RUN_PAGE_SIZE = 200;

/** Where a page of a run starts: the `from` query parameter, a whole number of receipts (absent: 0). */
export function runOffset(from: string | null): number {
  if (from === null || from === '') return 0;
  if (!/^\d{1,9}$/.test(from))
    throw new HttpProblem(400, 'from is the position of the first receipt to show, a whole number (0 for the oldest)');
  return Number(from);
}

/** Which page of a run is shown: from `offset`, at most `size` receipts, of `total` in the run index. */
export interface RunPaging {
  readonly offset: number;
  readonly total: number;
  readonly size: number;
}

const WIDTH = 1000;
const LABEL = 170;
const ROW = 24;

function stateClass(r: ReceiptRecord): string {
  return isAmbiguousRecord(r) ? 'ambiguous' : r.status;
}

/** The run's receipts as an SVG timeline: one row per receipt, positions as attributes (the CSP allows no inline style). */
export function timeline(ctx: PageContext, receipts: readonly ReceiptRecord[]): Html {
  if (receipts.length === 0) return html``;
  const nowMs = Math.max(...receipts.map((r) => r.readAtMs));
  const start = Math.min(...receipts.map((r) => r.createdMs));
  const end = Math.max(nowMs, ...receipts.map((r) => r.completedMs ?? r.readAtMs));
  const span = Math.max(1, end - start);
  const x = (ms: number) => LABEL + ((WIDTH - LABEL - 10) * (ms - start)) / span;
  const height = 30 + receipts.length * ROW;
  const rows = receipts.map((r, i) => {
    const y = 24 + i * ROW;
    const x0 = x(r.createdMs);
    const x1 = Math.max(x0 + 2, x(r.completedMs ?? r.readAtMs));
    const lostAt = r.ambiguousMs ?? (isAmbiguousRecord(r) ? r.leaseUntilMs : null);
    const marks: Html[] = [];
    if (r.attempts > 1 && r.startedMs !== null) {
      marks.push(
        html`<circle class="mark takeover" cx="${x(r.startedMs).toFixed(1)}" cy="${y + 7}" r="5"><title>attempt ${r.attempts} took over at ${isoTime(r.startedMs)}</title></circle>`,
      );
    }
    if (lostAt !== null) {
      marks.push(
        html`<rect class="mark lost" x="${(x(lostAt) - 4).toFixed(1)}" y="${y + 3}" width="8" height="8"><title>attempt ${r.attempts} lost its lease (ambiguous) at ${isoTime(lostAt)}</title></rect>`,
      );
    }
    if (r.resolvedMs !== null) {
      marks.push(
        html`<circle class="mark resolved" cx="${x(r.resolvedMs).toFixed(1)}" cy="${y + 7}" r="5"><title>resolved by an operator at ${isoTime(r.resolvedMs)}</title></circle>`,
      );
    }
    // Running from creation until the attempt was lost (or settled), ambiguous from then until settled, and a cap in the final status.
    const endMs = r.completedMs ?? r.readAtMs;
    const lostX = lostAt === null ? null : Math.min(Math.max(x(lostAt), x0), x1);
    // A call in an approval state has not run: its bar is the wait, in that state's colour.
    const base = isApprovalStatus(r.status) ? r.status : 'running';
    const segments: Html[] = [
      html`<rect class="bar ${base}" x="${x0.toFixed(1)}" y="${y}" width="${Math.max(1, (lostX ?? x1) - x0).toFixed(1)}" height="14"></rect>`,
    ];
    if (lostX !== null)
      segments.push(
        html`<rect class="bar ambiguous" x="${lostX.toFixed(1)}" y="${y}" width="${Math.max(1, x1 - lostX).toFixed(1)}" height="14"></rect>`,
      );
    if (r.status !== 'running' && !isApprovalStatus(r.status))
      segments.push(html`<rect class="bar ${r.status}" x="${Math.max(x0, x1 - 6).toFixed(1)}" y="${y}" width="6" height="14"></rect>`);
    return html`<a href="${receiptHref(ctx, r.redisKey)}"><text x="6" y="${y + 11}">${r.key.toolName.slice(0, 26)}</text>
<g><title>${r.key.toolName}: ${stateClass(r)}, attempt ${r.attempts}, created ${isoTime(r.createdMs)}${r.completedMs !== null ? `, settled ${isoTime(r.completedMs)}` : ''} (${duration(endMs - r.createdMs)})</title>${segments}</g>
${marks}</a>`;
  });
  return html`<svg class="timeline" viewBox="0 0 ${WIDTH} ${height}" role="img" aria-label="The run's receipts on a time axis">
<line class="axis" x1="${LABEL}" y1="16" x2="${WIDTH - 10}" y2="16"></line>
<text x="${LABEL}" y="12">${isoTime(start)}</text>
<text x="${WIDTH - 10}" y="12" text-anchor="end">+${duration(span)}</text>
${rows}
</svg>
<div class="legend"><span><span class="badge running">running</span></span><span><span class="badge ambiguous">ambiguous</span></span><span><span class="badge completed">completed</span> / <span class="badge failed">failed</span> (end cap)</span><span>○ takeover (a later attempt started)</span><span>■ attempt lost its lease</span><span>● resolved by an operator</span></div>`;
}

/**
 * The run page. With `paging`, `report` holds that page's receipts only; its
 * resume note is shown when the page holds the whole run, and otherwise the
 * page says where to get it.
 */
export function runPageView(ctx: PageContext, report: RunReport, paging?: RunPaging): Html {
  const now = Math.max(0, ...report.receipts.map((r) => r.readAtMs));
  const offset = paging?.offset ?? 0;
  const total = paging?.total ?? report.receipts.length;
  const whole = offset === 0 && report.receipts.length >= total;
  const link = (from: number) => href(ctx, '/run', { tenant: report.tenantId, run: report.runId, from: from === 0 ? undefined : from });
  const size = paging?.size ?? total;
  const pager = whole
    ? html``
    : html`<div class="pager">${offset > 0 ? html`<a href="${link(Math.max(0, Math.min(offset, total) - size))}" rel="prev">${'\u2190'} Older</a>` : ''}${
        offset + size < total ? html` <a href="${link(offset + size)}" rel="next">Newer ${'\u2192'}</a>` : ''
      }</div>`;
  return page(ctx, `Run ${report.runId}`, '', [
    whole
      ? html`<p>Tenant <strong>${report.tenantId}</strong>, run <strong>${report.runId}</strong>: ${total} live receipt${total === 1 ? '' : 's'}, oldest first.</p>`
      : html`<p>Tenant <strong>${report.tenantId}</strong>, run <strong>${report.runId}</strong>: <span id="run-range">showing ${report.receipts.length === 0 ? 'none' : `${offset + 1}\u2013${offset + report.receipts.length}`} of ${total} receipts</span>, oldest first.</p>`,
    report.receipts.length === 0
      ? whole
        ? html`<p>No receipts for this run under this prefix (none claimed, or all expired).</p>`
        : html`<p>No receipts from position ${offset + 1}: <a href="${link(0)}">the oldest</a>.</p>`
      : html`${timeline(ctx, report.receipts)}
<div class="table-wrap"><table><thead><tr><th>#</th><th>Tool</th><th>State</th><th>Attempts</th><th>Created</th><th>Settled</th><th class="hide-narrow">Owner</th><th></th></tr></thead><tbody>
${report.receipts.map((r, i) => html`<tr><td>${offset + i + 1}</td><td>${r.key.toolName}</td><td>${stateBadge(r)}</td><td>${r.attempts}</td><td>${time(r.createdMs, now)}</td><td>${time(r.completedMs, now)}</td><td class="mono hide-narrow">${r.owner ?? '-'}</td><td><a href="${receiptHref(ctx, r.redisKey)}">open</a></td></tr>`)}
</tbody></table></div>`,
    pager,
    html`<h2>Resume note</h2>${
      !whole
        ? html`<p class="muted" id="resume-note-elsewhere">The resume note is built from every receipt of the run, and this run has more than one page holds (${size}). Run <code>tool-receipts run ${report.tenantId} ${report.runId}</code> to print it.</p>`
        : report.note === null
          ? html`<p class="muted">None: no call of this run has finished or been interrupted.</p>`
          : html`<p class="muted">What a resumed agent of this run is told about the calls it made before:</p><pre id="resume-note">${report.note}</pre>`
    }`,
  ]);
}
