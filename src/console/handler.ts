/**
 * The console as a plain Node `http` request handler, `(req, res) => void`:
 * mount it on `http.createServer`, or in Express, Fastify or Hono behind the
 * team's own auth. Every request is authenticated (when tokens are set),
 * every write is a POST checked for its role and CSRF token, and every answer
 * carries a strict Content-Security-Policy.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { ToolReceiptsError } from '../core/errors.js';
import { AuditLog, DEFAULT_AUDIT_MAX_ENTRIES } from '../redis/audit-log.js';
import { checkedConnection, type RedisConnection } from '../redis/connection.js';
import { DEFAULT_KEY_PREFIX, validateKeyPrefix } from '../redis/keys.js';
import { countReceiptsByTenant } from '../redis/receipt-stats.js';
import { ReceiptStore } from '../redis/receipt-store.js';
import { RunRegistry } from '../redis/run-registry.js';
import { RESOLUTION_BY_MAX, RESOLUTION_NOTE_MAX, type Resolution } from '../redis/receipt-store.js';
import { CallNotSettledError } from '../bullmq/retry-jobs.js';
import { readReceipt } from '../operator/read-receipt.js';
import { resolveReceipt, retryJobs, type AuditTrail } from '../operator/resolve.js';
import { runReport } from '../operator/run-report.js';
import { ResolveRefusedError } from '../operator/errors.js';
import { CONSOLE_CSS } from './assets.js';
import { BulkActions } from './bulk.js';
import { ConsoleOptionsError } from './errors.js';
import type { Html } from './html.js';
import { find, needsPage, parseCursor, type ConsoleData, type ConsoleQueue } from './queries.js';
import { filterForm, filterOf, HttpProblem, isConnectionLoss, parseAttempts, readForm, resolutionTemplate } from './forms.js';
import {
  AUTH_COOKIE,
  checkTokens,
  cookieHeader,
  cookies,
  CSRF_COOKIE,
  csrfProblem,
  newCsrfToken,
  presentedToken,
  roleOf,
  setSecurityHeaders,
  type ConsoleRole,
  type ConsoleTokens,
} from './security.js';
import { auditPageView } from './pages/audit.js';
import { bulkJobView, bulkPageView } from './pages/bulk.js';
import { countsPageView } from './pages/counts.js';
import { findPageView } from './pages/find.js';
import { banner, href, page, type PageContext } from './pages/layout.js';
import { loginPageView } from './pages/login.js';
import { needsPageView } from './pages/needs.js';
import { receiptPageView, type ReceiptNotice } from './pages/receipt.js';
import { RUN_PAGE_SIZE, runOffset, runPageView } from './pages/run.js';

/** How to build a console. */
export interface ConsoleOptions {
  /** An ioredis `Redis` (or `Cluster`) on the receipts' server; the console never closes it. */
  readonly redis: RedisConnection;
  /** The receipts' key prefix; default `trc`. */
  readonly prefix?: string;
  /** The workers' `retentionMs`, kept on resolved receipts; default 24 h. */
  readonly retentionMs?: number;
  /**
   * The tokens a request must present (`Authorization: Bearer`, or the
   * cookie the sign-in form sets). Without any, every request is treated as
   * an operator's: only do that behind your own auth, or on loopback.
   */
  readonly tokens?: ConsoleTokens;
  /** The path the handler is mounted at (`/ops/receipts`), for its links; default the root. */
  readonly basePath?: string;
  /** BullMQ queues to look job ids up in (names, or `{ name, prefix }`; prefix default `bull`). */
  readonly queues?: readonly (string | ConsoleQueue)[];
  /** Who is acting, for the audit log; default the token's role and the client's address. */
  readonly actor?: (req: IncomingMessage, role: ConsoleRole) => string;
  /** Where writes are recorded as coming from; default `console`. */
  readonly source?: string;
  /** Entries the audit stream keeps, roughly; default 10,000. */
  readonly auditMaxEntries?: number;
  /** Called with every unexpected error (the page shows a generic message); default: written to stderr. */
  readonly onError?: (error: unknown) => void;
}

/** The request handler {@link createConsoleHandler} returns. */
export type ConsoleHandler = (req: IncomingMessage, res: ServerResponse) => void;

/** A request parsed enough to route it. */
interface Request {
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  readonly path: string;
  readonly query: URLSearchParams;
  readonly ctx: PageContext;
}

function normalizeBase(base: string | undefined): string {
  if (base === undefined || base === '' || base === '/') return '';
  if (!/^\/[A-Za-z0-9._~\-/]*$/.test(base))
    throw new ConsoleOptionsError(`basePath must be a path such as /ops/receipts, got ${JSON.stringify(base)}`);
  return base.replace(/\/+$/, '');
}

function send(res: ServerResponse, status: number, body: Html | string, type = 'text/html; charset=utf-8'): void {
  if (res.headersSent) return;
  setSecurityHeaders(res);
  res.statusCode = status;
  res.setHeader('Content-Type', type);
  res.end(String(body));
}

function redirect(res: ServerResponse, location: string): void {
  setSecurityHeaders(res);
  res.statusCode = 303;
  res.setHeader('Location', location);
  res.end();
}

/**
 * Builds the console's request handler. Throws `ConsoleOptionsError` for
 * unusable options (a short token, a bad base path) and
 * `InvalidKeyPrefixError` for a bad prefix.
 */
export function createConsoleHandler(options: ConsoleOptions): ConsoleHandler {
  checkedConnection(options?.redis, 'createConsoleHandler');
  // The client as given, not its adapter: BullMQ's Queue (job lookups, retries) takes it too.
  const redis = options.redis;
  const prefix = validateKeyPrefix(options.prefix ?? DEFAULT_KEY_PREFIX);
  const tokens = options.tokens ?? {};
  checkTokens(tokens);
  const base = normalizeBase(options.basePath);
  const store = new ReceiptStore({ redis, prefix, ...(options.retentionMs !== undefined ? { retentionMs: options.retentionMs } : {}) });
  const audit = new AuditLog(redis, prefix, options.auditMaxEntries ?? DEFAULT_AUDIT_MAX_ENTRIES);
  const data: ConsoleData = {
    store,
    redis,
    registry: new RunRegistry(redis, prefix),
    audit,
    queues: (options.queues ?? []).map((q) => (typeof q === 'string' ? { name: q } : q)),
  };
  const bulk = new BulkActions(data);
  const source = options.source ?? 'console';
  const onError = options.onError ?? ((error: unknown) => console.error('tool-receipts console: unexpected error', error));

  const trail = (req: IncomingMessage, role: ConsoleRole): AuditTrail => ({
    log: audit,
    source,
    actor:
      options.actor?.(req, role) ??
      `${tokens.operator === undefined ? 'console (no token)' : `${role} token`} from ${req.socket.remoteAddress ?? 'unknown address'}`,
  });

  async function getPage(r: Request): Promise<void> {
    const { ctx, query, res } = r;
    switch (r.path) {
      case '/console.css':
        return send(res, 200, CONSOLE_CSS, 'text/css; charset=utf-8');
      case '/favicon.ico':
        return send(res, 204, '', 'image/x-icon');
      case '/': {
        const form = filterForm(query);
        const { filter, problem } = filterOf(form);
        const view = await needsPage(data, filter, parseCursor(query.get('after') ?? undefined));
        return send(res, problem ? 400 : 200, needsPageView(ctx, form, view, problem));
      }
      case '/find': {
        const q = query.get('q') ?? '';
        if (q.trim() === '') return send(res, 200, findPageView(ctx, q, undefined));
        try {
          return send(res, 200, findPageView(ctx, q, await find(data, q)));
        } catch (err) {
          if (err instanceof ToolReceiptsError) return send(res, 400, findPageView(ctx, q, undefined, err.message));
          throw err;
        }
      }
      case '/receipt': {
        const record = await readReceipt(store, query.get('key') ?? '');
        const resolved = query.get('notice') === 'resolved' && record.resolvedMs !== null;
        const notice: ReceiptNotice | undefined = resolved
          ? {
              kind: 'ok',
              text: `Resolved as ${record.status} at attempt ${record.attempts}. ${record.status === 'completed' ? 'Later claims of this call replay the recorded result.' : `The next claim of this call runs it again, as attempt ${record.attempts + 1}.`}`,
            }
          : undefined;
        return send(res, 200, receiptPageView(ctx, record, notice));
      }
      case '/run': {
        const tenant = query.get('tenant') ?? '';
        const run = query.get('run') ?? '';
        if (tenant === '' || run === '') throw new HttpProblem(400, 'a run is named by its tenant and its run id');
        const offset = runOffset(query.get('from'));
        const { receipts, total } = await store.listRunPage(tenant, run, { offset, limit: RUN_PAGE_SIZE });
        return send(res, 200, runPageView(ctx, runReport(tenant, run, receipts), { offset, total, size: RUN_PAGE_SIZE }));
      }
      case '/bulk': {
        const form = filterForm(query);
        const { filter, problem } = filterOf(form);
        const draft = query.get('preview') === '1' && !problem ? await bulk.preview(filter, { ...form }) : undefined;
        const history = (await audit.read({ count: 200 })).filter((e) => e.action === 'bulk-resolve').slice(0, 20);
        return send(res, problem ? 400 : 200, bulkPageView(ctx, form, draft, history, draft?.readAtMs ?? Date.now(), problem));
      }
      case '/bulk/job': {
        const job = bulk.job(query.get('id') ?? '');
        if (!job)
          throw new HttpProblem(
            404,
            'no bulk action of that id in this console (they are kept in memory until it restarts); see the history',
          );
        return send(res, 200, bulkJobView(ctx, job));
      }
      case '/counts': {
        const counted = await countReceiptsByTenant(redis, data.registry);
        // No run registered: stats reads the receipts themselves (receipts an earlier version wrote), and says so.
        const all = counted.all ?? (await store.stats());
        const byTenant = counted.byTenant;
        const shown = 200;
        const tenants = [...byTenant.values()]
          .sort((a, b) => b.total - a.total || (a.tenantId ?? '').localeCompare(b.tenantId ?? ''))
          .slice(0, shown);
        return send(res, 200, countsPageView(ctx, all, tenants, shown));
      }
      case '/audit': {
        const before = query.get('before') ?? undefined;
        const entries = await audit.read({ count: 50, ...(before && /^\d+-\d+$/.test(before) ? { before } : {}) });
        const last = entries.length === 50 ? entries[entries.length - 1]?.id : undefined;
        return send(res, 200, auditPageView(ctx, entries, Date.now(), last));
      }
      default:
        throw new HttpProblem(404, 'no such page');
    }
  }

  async function postAction(r: Request, role: ConsoleRole): Promise<void> {
    const { ctx, req, res } = r;
    const form = await readForm(req);
    if (role !== 'operator')
      throw new HttpProblem(403, 'this token is read-only: resolving, retrying and bulk actions need the operator token');
    const problem = csrfProblem(req, form.get('csrf') ?? undefined);
    if (problem) throw new HttpProblem(403, `refused: ${problem}`);
    switch (r.path) {
      case '/receipt/resolve': {
        const redisKey = form.get('key') ?? '';
        const epoch = form.get('epoch') ?? '';
        const audit = trail(req, role);
        const note = (form.get('note') ?? '').trim().slice(0, RESOLUTION_NOTE_MAX);
        const resolution: Resolution = {
          ...resolutionTemplate(form),
          attemptsSeen: parseAttempts(form.get('attempts')),
          ...(epoch !== '' ? { epochSeen: epoch } : {}),
          by: audit.actor.slice(0, RESOLUTION_BY_MAX),
          ...(note !== '' ? { note } : {}),
        };
        try {
          await resolveReceipt(store, redisKey, resolution, { audit });
        } catch (err) {
          if (!(err instanceof ResolveRefusedError)) throw err;
          const now = await readReceipt(store, redisKey).catch(() => undefined);
          const text = `${err.message}. The page you resolved from showed attempt ${resolution.attemptsSeen}; below is the receipt as it is now.`;
          if (!now) throw new HttpProblem(409, text);
          return send(res, 409, receiptPageView(ctx, now, { kind: 'error', text }));
        }
        return redirect(res, href(ctx, '/receipt', { key: redisKey, notice: 'resolved' }));
      }
      case '/receipt/retry': {
        const record = await readReceipt(store, form.get('key') ?? '');
        try {
          const jobs = await retryJobs(redis, record, trail(req, role));
          const retried = jobs.filter((j) => j.action === 'retried').length;
          return send(
            res,
            200,
            receiptPageView(ctx, await readReceipt(store, record.redisKey), {
              kind: retried > 0 ? 'ok' : 'note',
              text: `Retried ${retried} of ${jobs.length} recorded job(s).`,
              jobs,
            }),
          );
        } catch (err) {
          if (err instanceof CallNotSettledError) return send(res, 409, receiptPageView(ctx, record, { kind: 'error', text: err.message }));
          throw err;
        }
      }
      case '/bulk/start': {
        const draft = bulk.draft(form.get('draft') ?? '');
        if (!draft)
          throw new HttpProblem(409, 'this preview is no longer known (already confirmed, or the console restarted): preview again');
        const name = (form.get('name') ?? '').trim();
        if (name === '') throw new HttpProblem(400, 'name the action: the name is kept in the history');
        if (form.get('confirm') !== 'yes') throw new HttpProblem(400, 'tick the confirmation box');
        const job = bulk.start(draft, name.slice(0, 200), resolutionTemplate(form), trail(req, role));
        return redirect(res, href(ctx, '/bulk/job', { id: job.id }));
      }
      default:
        throw new HttpProblem(404, 'no such action');
    }
  }

  async function login(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const form = await readForm(req);
    const problem = csrfProblem(req, undefined);
    // No CSRF cookie exists before signing in; the origin checks still apply.
    if (problem && !problem.startsWith('the form is missing')) return send(res, 403, loginPageView({ base }, `refused: ${problem}`));
    const token = form.get('token') ?? '';
    if (roleOf(token, tokens) === undefined || (tokens.operator === undefined && tokens.read === undefined)) {
      return send(res, 401, loginPageView({ base }, 'That token is not valid.'));
    }
    res.setHeader('Set-Cookie', cookieHeader(req, AUTH_COOKIE, token, base === '' ? '/' : base, 12 * 3600));
    return redirect(res, href({ base }, '/'));
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://console.invalid');
    let path = url.pathname;
    if (base !== '' && (path === base || path.startsWith(`${base}/`))) path = path.slice(base.length) || '/';
    const method = req.method ?? 'GET';
    if (method === 'POST' && path === '/login') return login(req, res);
    const role = roleOf(presentedToken(req), tokens);
    if (role === undefined) {
      return send(
        res,
        401,
        method === 'GET' || method === 'HEAD' ? loginPageView({ base }) : 'a valid token is needed',
        method === 'GET' || method === 'HEAD' ? undefined : 'text/plain; charset=utf-8',
      );
    }
    let csrf = cookies(req).get(CSRF_COOKIE);
    if (csrf === undefined || !/^[A-Za-z0-9_-]{32}$/.test(csrf)) {
      csrf = newCsrfToken();
      res.setHeader('Set-Cookie', cookieHeader(req, CSRF_COOKIE, csrf, base === '' ? '/' : base));
    }
    const ctx: PageContext = { base, role, csrf, prefix };
    const r: Request = { req, res, path, query: url.searchParams, ctx };
    try {
      if (method === 'GET' || method === 'HEAD') return await getPage(r);
      if (method === 'POST') return await postAction(r, role);
      res.setHeader('Allow', 'GET, HEAD, POST');
      throw new HttpProblem(405, `${method} is not used by this console`);
    } catch (err) {
      if (err instanceof HttpProblem) return send(res, err.status, page(ctx, 'Refused', '', banner('error', err.message)));
      if (err instanceof ToolReceiptsError) {
        const status = err.code === 'cli.receipt_not_found' ? 404 : 400;
        return send(res, status, page(ctx, status === 404 ? 'Not found' : 'Refused', '', banner('error', err.message)));
      }
      throw err;
    }
  }

  return (req, res) => {
    handle(req, res).catch((err: unknown) => {
      if (isConnectionLoss(err)) {
        send(res, 503, `Redis is not reachable right now (${(err as Error).message}); try again in a moment`, 'text/plain; charset=utf-8');
        return;
      }
      onError(err);
      send(res, 500, 'unexpected error; see the console process log', 'text/plain; charset=utf-8');
    });
  };
}
