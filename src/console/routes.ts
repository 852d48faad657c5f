/**
 * The console's routes: the pages and forms it serves (the lists every
 * security test walks), the request as the routes see it, and the pages'
 * handlers, each reading through the console's indexes.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { ToolReceiptsError } from '../core/errors.js';
import { countPendingApprovals } from '../approvals/read.js';
import { countReceiptsByTenant, StatsTotals } from '../redis/runs/counts.js';
import { listCapCounts } from '../limits/cap-counts.js';
import { listLimitCounts } from '../limits/limit-counts.js';
import { LimitStore } from '../limits/limit-store.js';
import { readReceipt } from '../operator/read-receipt.js';
import { runReport } from '../operator/run-report.js';
import { CONSOLE_CSS } from './assets.js';
import type { BulkActions } from './bulk.js';
import { filterForm, filterOf, HttpProblem } from './forms.js';
import type { HostName } from '../http/hosts.js';
import type { Html } from './html.js';
import { find } from './find.js';
import { needsPage, parseCursor, type ConsoleData } from './queries.js';
import { setSecurityHeaders } from './security.js';
import { auditPageView } from './pages/audit.js';
import { bulkJobView, bulkPageView } from './pages/bulk.js';
import { countsPageView } from './pages/counts.js';
import { findPageView } from './pages/find.js';
import type { PageContext } from './pages/layout.js';
import { needsPageView } from './pages/needs.js';
import { receiptPageView, type ReceiptNotice } from './pages/receipt.js';
import { RUN_PAGE_SIZE, runOffset, runPageView } from './pages/run.js';

/** The pages the console serves (GET and HEAD), as paths under its mount point. */
export const CONSOLE_PAGES = [
  '/',
  '/approvals',
  '/find',
  '/receipt',
  '/run',
  '/bulk',
  '/bulk/job',
  '/counts',
  '/audit',
  '/console.css',
  '/favicon.ico',
] as const;
/** The forms it takes (POST): every one checks the Host, then the token, role and CSRF token. */
export const CONSOLE_ACTIONS = ['/login', '/receipt/resolve', '/receipt/retry', '/bulk/start', '/approvals/decide'] as const;

/** Handlers by path; typed over a list above, so a route cannot be served without being listed. */
export type Route<P extends string> = Record<P, (r: Request) => Promise<void>>;
/** Whether `path` is one of `routes`. */
export const isRoute = <P extends string>(routes: readonly P[], path: string): path is P => (routes as readonly string[]).includes(path);

/** A request parsed enough to route it. */
export interface Request {
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  readonly path: string;
  readonly query: URLSearchParams;
  readonly ctx: PageContext;
  /** Its `Host`, checked against the allow-list. */
  readonly host: HostName;
  /** What its CSRF token is bound to: the token it presents, or `''` when the console has none. */
  readonly session: string;
}

/** An answer with the security headers (nothing once headers went out). */
export function send(res: ServerResponse, status: number, body: Html | string, type = 'text/html; charset=utf-8'): void {
  if (res.headersSent) return;
  setSecurityHeaders(res);
  res.statusCode = status;
  res.setHeader('Content-Type', type);
  res.end(String(body));
}

/** An answer that is a sentence, not a page: a request refused, or one that failed, before any page was drawn. */
export function sendText(res: ServerResponse, status: number, text: string): void {
  send(res, status, text, 'text/plain; charset=utf-8');
}

/** A 303 to `location` with the security headers. */
export function redirect(res: ServerResponse, location: string): void {
  setSecurityHeaders(res);
  res.statusCode = 303;
  res.setHeader('Location', location);
  res.end();
}

/** The pages' handlers; `approvals` is the "Needs approval" page's (see approvals.ts). */
export function pageRoutes(deps: {
  readonly data: ConsoleData;
  readonly bulk: BulkActions;
  readonly approvals: (r: Request) => Promise<void>;
}): Route<(typeof CONSOLE_PAGES)[number]> {
  const { data, bulk } = deps;
  const { store, audit, redis } = data;
  return {
    '/console.css': async ({ res }) => send(res, 200, CONSOLE_CSS, 'text/css; charset=utf-8'),
    '/favicon.ico': async ({ res }) => send(res, 204, '', 'image/x-icon'),
    '/': async ({ ctx, query, res }) => {
      const form = filterForm(query);
      const { filter, problem } = filterOf(form);
      const view = await needsPage(data, filter, parseCursor(query.get('after') ?? undefined));
      send(res, problem ? 400 : 200, needsPageView(ctx, form, view, problem));
    },
    '/approvals': deps.approvals,
    '/find': async ({ ctx, query, res }) => {
      const q = query.get('q') ?? '';
      if (q.trim() === '') return send(res, 200, findPageView(ctx, q, undefined));
      try {
        send(res, 200, findPageView(ctx, q, await find(data, q)));
      } catch (err) {
        if (!(err instanceof ToolReceiptsError)) throw err;
        send(res, 400, findPageView(ctx, q, undefined, err.message));
      }
    },
    '/receipt': async ({ ctx, query, res }) => {
      const record = await readReceipt(store, query.get('key') ?? '');
      const resolved = query.get('notice') === 'resolved' && record.resolvedMs !== null;
      const notice: ReceiptNotice | undefined = resolved
        ? {
            kind: 'ok',
            text: `Resolved as ${record.status} at attempt ${record.attempts}. ${record.status === 'completed' ? 'Later claims of this call replay the recorded result.' : `The next claim of this call runs it again, as attempt ${record.attempts + 1}.`}`,
          }
        : undefined;
      send(res, 200, receiptPageView(ctx, record, notice));
    },
    '/run': async ({ ctx, query, res }) => {
      const tenant = query.get('tenant') ?? '';
      const run = query.get('run') ?? '';
      if (tenant === '' || run === '') throw new HttpProblem(400, 'a run is named by its tenant and its run id');
      const offset = runOffset(query.get('from'));
      const { receipts, total } = await store.listRunPage(tenant, run, { offset, limit: RUN_PAGE_SIZE });
      send(res, 200, runPageView(ctx, runReport(tenant, run, receipts), { offset, total, size: RUN_PAGE_SIZE }));
    },
    '/bulk': async ({ ctx, query, res }) => {
      const form = filterForm(query);
      const { filter, problem } = filterOf(form);
      const draft = query.get('preview') === '1' && !problem ? await bulk.preview(filter, { ...form }) : undefined;
      const history = (await audit.read({ count: 200 })).filter((e) => e.action === 'bulk-resolve').slice(0, 20);
      send(res, problem ? 400 : 200, bulkPageView(ctx, form, draft, history, draft?.readAtMs ?? Date.now(), problem));
    },
    '/bulk/job': async ({ ctx, query, res }) => {
      const job = bulk.job(query.get('id') ?? '');
      if (!job)
        throw new HttpProblem(
          404,
          'no bulk action of that id in this console (they are kept in memory until it restarts); see the history',
        );
      send(res, 200, bulkJobView(ctx, job));
    },
    '/counts': async ({ ctx, res }) => {
      const counted = await countReceiptsByTenant(redis, data.registry);
      // No run registered (a new or mistyped prefix, receipts an earlier release wrote): nothing walks the keyspace to
      // count them; the page says how to (tool-receipts stats --scan).
      const all = counted.all ?? new StatsTotals().finish(store.prefix, undefined, Date.now(), 'counting-sets');
      const shown = 200;
      const tenants = [...counted.byTenant.values()]
        .sort((a, b) => b.total - a.total || (a.tenantId ?? '').localeCompare(b.tenantId ?? ''))
        .slice(0, shown);
      const limitStore = new LimitStore({ redis, prefix: store.prefix });
      const limits = await listLimitCounts(limitStore, redis);
      const pending = await countPendingApprovals({ redis, prefix: store.prefix });
      const caps = await listCapCounts(limitStore, redis);
      send(res, 200, countsPageView(ctx, all, tenants, shown, limits, pending, caps, counted.all === undefined));
    },
    '/audit': async ({ ctx, query, res }) => {
      const before = query.get('before') ?? undefined;
      const entries = await audit.read({ count: 50, ...(before && /^\d+-\d+$/.test(before) ? { before } : {}) });
      const last = entries.length === 50 ? entries[entries.length - 1]?.id : undefined;
      send(res, 200, auditPageView(ctx, entries, Date.now(), last));
    },
  };
}
