/**
 * The console as a plain Node `http` request handler, `(req, res) => void`:
 * mount it on `http.createServer`, or in Express, Fastify or Hono behind the
 * team's own auth. Every request must name a host the console answers for
 * (loopback or configured), is authenticated (when tokens are set), every
 * write is a POST checked for its role and CSRF token, and every answer
 * carries a strict Content-Security-Policy.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { ToolReceiptsError } from '../core/errors.js';
import { AuditLog, DEFAULT_AUDIT_MAX_ENTRIES } from '../redis/operators/audit-log.js';
import { checkedConnection, type RedisConnection } from '../redis/connection/connection.js';
import type { DurabilityOptions } from '../redis/durability/durability.js';
import { DEFAULT_KEY_PREFIX, validateKeyPrefix } from '../redis/keys.js';
import { ReceiptStore, RESOLUTION_BY_MAX, RESOLUTION_NOTE_MAX, type Resolution } from '../redis/receipts/store.js';
import { RunRegistry } from '../redis/runs/registry.js';
import { CallNotSettledError } from '../bullmq/sweep/retry-jobs.js';
import { readReceipt } from '../operator/read-receipt.js';
import { resolveReceipt, retryJobs, type AuditTrail } from '../operator/resolve.js';
import { ResolveRefusedError } from '../operator/errors.js';
import { approvalDecision, approvalsPage } from './approvals.js';
import { BulkActions } from './bulk.js';
import { ConsoleOptionsError } from './errors.js';
import type { ConsoleData, ConsoleQueue } from './queries.js';
import { HttpProblem, isConnectionLoss, parseAttempts, readForm, resolutionTemplate } from './forms.js';
import { HostAllowList, type HostName } from '../http/hosts.js';
import { CONSOLE_ACTIONS, CONSOLE_PAGES, isRoute, pageRoutes, redirect, send, sendText, type Request, type Route } from './routes.js';
import {
  AUTH_COOKIE,
  checkTokens,
  cookieHeader,
  cookies,
  CSRF_COOKIE,
  csrfProblem,
  CsrfTokens,
  hasTokens,
  mayDecideApprovals,
  roleRefusal,
  presentedToken,
  roleOf,
  type ConsoleRole,
  type ConsoleTokens,
} from './security.js';
import { banner, href, page, type PageContext } from './pages/layout.js';
import { loginPageView } from './pages/login.js';
import { receiptPageView } from './pages/receipt.js';

/** How to build a console. */
export interface ConsoleOptions {
  /** An ioredis `Redis` (or `Cluster`) on the receipts' server; the console never closes it. */
  readonly redis: RedisConnection;
  /** The receipts' key prefix; default `trc`. */
  readonly prefix?: string;
  /** The workers' `retentionMs`, kept on resolved receipts; default 24 h. */
  readonly retentionMs?: number;
  /** The workers' `durability`: an approval decided here, and a resolve (one or in bulk), wait for it as the workers' writes do. */
  readonly durability?: DurabilityOptions;
  /**
   * The tokens a request must present (`Authorization: Bearer`, or the
   * cookie the sign-in form sets). Without any, every request is treated as
   * an operator's: only do that behind your own auth, or on loopback.
   */
  readonly tokens?: ConsoleTokens;
  /**
   * Host names (and addresses) the console answers for besides loopback
   * (`localhost`, `127.0.0.0/8`, `[::1]`), each with or without a port:
   * `['ops.example.com', '10.0.0.5:8787']`. A request whose `Host` is
   * anything else gets 421 before anything is read, so a page that rebinds
   * its own name to the console's address reads nothing. Mounted behind a
   * proxy, list the names users type.
   */
  readonly allowedHosts?: readonly string[];
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

function normalizeBase(base: string | undefined): string {
  if (base === undefined || base === '' || base === '/') return '';
  if (!/^\/[A-Za-z0-9._~\-/]*$/.test(base))
    throw new ConsoleOptionsError(`basePath must be a path such as /ops/receipts, got ${JSON.stringify(base)}`);
  return base.replace(/\/+$/, '');
}

/**
 * Builds the console's request handler. Throws `ConsoleOptionsError` for
 * unusable options (a short token, a bad base path, an allowed host that is
 * not a host) and `InvalidKeyPrefixError` for a bad prefix.
 */
export function createConsoleHandler(options: ConsoleOptions): ConsoleHandler {
  checkedConnection(options?.redis, 'createConsoleHandler');
  // The client as given, not its adapter: BullMQ's Queue (job lookups, retries) takes it too.
  const redis = options.redis;
  const prefix = validateKeyPrefix(options.prefix ?? DEFAULT_KEY_PREFIX);
  const tokens = options.tokens ?? {};
  checkTokens(tokens);
  const base = normalizeBase(options.basePath);
  const hosts = new HostAllowList(options.allowedHosts, (message) => new ConsoleOptionsError(message));
  const csrf = new CsrfTokens();
  // A resolve is a receipt write as the workers' are: a failover must not forget it either.
  const store = new ReceiptStore({ redis, prefix, retentionMs: options.retentionMs, durability: options.durability });
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
      `${hasTokens(tokens) ? `${role} token` : 'console (no token)'} from ${req.socket.remoteAddress ?? 'unknown address'}`,
  });

  const pages = pageRoutes({ data, bulk, approvals: approvalsPage(data) });

  /** The form of a POST, once its role (operator, unless `may` says which) and CSRF token are checked. */
  async function checkedForm(r: Request, may: (role: ConsoleRole) => boolean = (role) => role === 'operator'): Promise<URLSearchParams> {
    const form = await readForm(r.req);
    if (!may(r.ctx.role)) throw new HttpProblem(403, roleRefusal(r.ctx.role, may === mayDecideApprovals));
    const problem = csrfProblem(r.req, r.host, form.get('csrf') ?? undefined, csrf, r.session);
    if (problem) throw new HttpProblem(403, `refused: ${problem}`);
    return form;
  }

  const actions: Route<Exclude<(typeof CONSOLE_ACTIONS)[number], '/login'>> = {
    '/approvals/decide': approvalDecision({
      data,
      form: (r) => checkedForm(r, mayDecideApprovals),
      actor: (r) => trail(r.req, r.ctx.role).actor,
      ...(options.retentionMs !== undefined ? { retentionMs: options.retentionMs } : {}),
      ...(options.durability !== undefined ? { durability: options.durability } : {}),
    }),
    '/receipt/resolve': async (r) => {
      const { ctx, req, res } = r;
      const form = await checkedForm(r);
      const redisKey = form.get('key') ?? '';
      const epoch = form.get('epoch') ?? '';
      const audit = trail(req, ctx.role);
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
      redirect(res, href(ctx, '/receipt', { key: redisKey, notice: 'resolved' }));
    },
    '/receipt/retry': async (r) => {
      const { ctx, req, res } = r;
      const form = await checkedForm(r);
      const record = await readReceipt(store, form.get('key') ?? '');
      try {
        const jobs = await retryJobs(redis, record, trail(req, ctx.role));
        const retried = jobs.filter((j) => j.action === 'retried').length;
        send(
          res,
          200,
          receiptPageView(ctx, await readReceipt(store, record.redisKey), {
            kind: retried > 0 ? 'ok' : 'note',
            text: `Retried ${retried} of ${jobs.length} recorded job(s).`,
            jobs,
          }),
        );
      } catch (err) {
        if (!(err instanceof CallNotSettledError)) throw err;
        send(res, 409, receiptPageView(ctx, record, { kind: 'error', text: err.message }));
      }
    },
    '/bulk/start': async (r) => {
      const { ctx, req, res } = r;
      const form = await checkedForm(r);
      const draft = bulk.draft(form.get('draft') ?? '');
      if (!draft)
        throw new HttpProblem(409, 'this preview is no longer known (already confirmed, or the console restarted): preview again');
      const name = (form.get('name') ?? '').trim();
      if (name === '') throw new HttpProblem(400, 'name the action: the name is kept in the history');
      if (form.get('confirm') !== 'yes') throw new HttpProblem(400, 'tick the confirmation box');
      const job = bulk.start(draft, name.slice(0, 200), resolutionTemplate(form), trail(req, ctx.role));
      redirect(res, href(ctx, '/bulk/job', { id: job.id }));
    },
  };

  /** The request's CSRF token: its cookie when this console minted it for this session, else a fresh one, set as the cookie. */
  function csrfToken(req: IncomingMessage, res: ServerResponse, session: string): string {
    const current = cookies(req).get(CSRF_COOKIE);
    if (current !== undefined && csrf.valid(current, session)) return current;
    const fresh = csrf.mint(session);
    res.appendHeader('Set-Cookie', cookieHeader(req, CSRF_COOKIE, fresh, base === '' ? '/' : base));
    return fresh;
  }

  /** Signing in: the CSRF token of the sign-in form (minted for no session), then the token. */
  async function login(req: IncomingMessage, res: ServerResponse, host: HostName): Promise<void> {
    const form = await readForm(req);
    const problem = csrfProblem(req, host, form.get('csrf') ?? undefined, csrf, '');
    if (problem) return send(res, 403, loginPageView({ base, csrf: csrfToken(req, res, '') }, `refused: ${problem}`));
    const token = form.get('token') ?? '';
    if (roleOf(token, tokens) === undefined || !hasTokens(tokens)) {
      return send(res, 401, loginPageView({ base, csrf: csrfToken(req, res, '') }, 'That token is not valid.'));
    }
    res.appendHeader('Set-Cookie', cookieHeader(req, AUTH_COOKIE, token, base === '' ? '/' : base, 12 * 3600));
    return redirect(res, href({ base }, '/'));
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    // First, before any token or Redis read: a Host this console does not answer for (DNS rebinding).
    const checked = hosts.check(req);
    if ('problem' in checked) {
      const text = `This console answers only for localhost, 127.0.0.0/8, [::1] and the hosts it is configured with (--allowed-host, allowedHosts); refused: ${checked.problem}.\n`;
      return sendText(res, 421, text);
    }
    const { host } = checked;
    const target = req.url ?? '/';
    let url: URL;
    try {
      // An origin-form target is a path even when it starts with `//`; an absolute-form one passed the host check.
      url = new URL(target.startsWith('/') ? `http://console.invalid${target}` : target);
    } catch {
      return sendText(res, 400, 'the request target is not a URL');
    }
    let path = url.pathname;
    if (base !== '' && (path === base || path.startsWith(`${base}/`))) path = path.slice(base.length) || '/';
    const method = req.method ?? 'GET';
    const reading = method === 'GET' || method === 'HEAD';
    if (method === 'POST' && path === '/login') {
      try {
        return await login(req, res, host);
      } catch (err) {
        // A body of another type or too large: said, not logged as a bug.
        if (err instanceof HttpProblem) return sendText(res, err.status, err.message);
        throw err;
      }
    }
    const presented = presentedToken(req);
    const role = roleOf(presented, tokens);
    if (role === undefined) {
      if (!reading) return sendText(res, 401, 'a valid token is needed');
      return send(res, 401, loginPageView({ base, csrf: csrfToken(req, res, '') }));
    }
    const session = hasTokens(tokens) ? (presented ?? '') : '';
    const ctx: PageContext = { base, role, csrf: csrfToken(req, res, session), prefix };
    const r: Request = { req, res, path, query: url.searchParams, ctx, host, session };
    try {
      if (reading && isRoute(CONSOLE_PAGES, path)) return await pages[path](r);
      if (method === 'POST' && isRoute(CONSOLE_ACTIONS, path) && path !== '/login') return await actions[path](r);
      if (reading) throw new HttpProblem(404, 'no such page');
      if (method === 'POST') throw new HttpProblem(404, 'no such action');
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
        return sendText(res, 503, `Redis is not reachable right now (${(err as Error).message}); try again in a moment`);
      }
      onError(err);
      sendText(res, 500, 'unexpected error; see the console process log');
    });
  };
}
