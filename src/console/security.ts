/**
 * Who may do what in the console: tokens checked in constant time on every
 * request, three roles (read-only, approver and operator), a CSRF defence for every write
 * (a token the console signed, in a SameSite cookie that each form echoes,
 * and the request's Origin), and the headers every answer carries (a strict
 * Content-Security-Policy among them).
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { ConsoleOptionsError } from './errors.js';
import { hostText, type HostName } from '../http/hosts.js';
import { bearerToken, MIN_TOKEN_LENGTH, sameSecret } from '../http/tokens.js';

export { MIN_TOKEN_LENGTH } from '../http/tokens.js';

/**
 * What a request may do: `read` sees every page and decides nothing;
 * `approver` also approves and denies calls awaiting approval, nothing else;
 * `operator` does every write (resolve, retry, bulk resolve, approve, deny).
 */
export type ConsoleRole = 'read' | 'approver' | 'operator';

/** The tokens the console accepts. With none, every request is an operator's (mount it behind your own auth). */
export interface ConsoleTokens {
  /** Grants every page and every write. */
  readonly operator?: string;
  /** Grants every page, and approving or denying calls awaiting approval. */
  readonly approver?: string;
  /** Grants the pages only. */
  readonly read?: string;
}

/** Whether a role may approve or deny calls awaiting approval. */
export const mayDecideApprovals = (role: ConsoleRole): boolean => role === 'operator' || role === 'approver';

/** Why a role may not post a form: approving takes an approver or operator token, every other write an operator's. */
export function roleRefusal(role: ConsoleRole, approving: boolean): string {
  if (approving) return 'this token is read-only: approving and denying need the approver or operator token';
  const held = role === 'approver' ? 'an approver token: it approves and denies calls only' : 'read-only';
  return `this token is ${held}; resolving, retrying and bulk actions need the operator token`;
}

/** Whether any token is configured (else every request is an operator's). */
export const hasTokens = (tokens: ConsoleTokens): boolean =>
  tokens.operator !== undefined || tokens.approver !== undefined || tokens.read !== undefined;

export const AUTH_COOKIE = 'trc_console_token';
export const CSRF_COOKIE = 'trc_console_csrf';

/** Checks the tokens' shape; throws {@link ConsoleOptionsError}. */
export function checkTokens(tokens: ConsoleTokens): void {
  for (const [role, token] of Object.entries(tokens)) {
    if (token === undefined) continue;
    if (typeof token !== 'string' || token.length < MIN_TOKEN_LENGTH || /\s/.test(token)) {
      throw new ConsoleOptionsError(`the ${role} token must be at least ${MIN_TOKEN_LENGTH} characters without spaces`);
    }
  }
  const given = [tokens.operator, tokens.approver, tokens.read].filter((t) => t !== undefined);
  if (new Set(given).size !== given.length) {
    throw new ConsoleOptionsError('the operator, approver and read-only tokens must differ, one per role');
  }
}

/** Cookies of a request by name (the first of each). */
export function cookies(req: IncomingMessage): Map<string, string> {
  const found = new Map<string, string>();
  for (const part of (req.headers.cookie ?? '').split(';')) {
    const eq = part.indexOf('=');
    if (eq < 0) continue;
    const name = part.slice(0, eq).trim();
    if (name === '' || found.has(name)) continue;
    try {
      found.set(name, decodeURIComponent(part.slice(eq + 1).trim()));
    } catch {
      // a cookie some other page set, not ours
    }
  }
  return found;
}

/** The token a request presents: `Authorization: Bearer <token>`, else the console's cookie. */
export function presentedToken(req: IncomingMessage): string | undefined {
  return bearerToken(req) ?? cookies(req).get(AUTH_COOKIE);
}

/**
 * The role a token grants, or `undefined` for none. Every token is compared
 * every time, so the time taken says nothing about which (if any) matched.
 */
export function roleOf(token: string | undefined, tokens: ConsoleTokens): ConsoleRole | undefined {
  if (!hasTokens(tokens)) return 'operator';
  if (token === undefined) return undefined;
  const operator = sameSecret(token, tokens.operator ?? '');
  const approver = sameSecret(token, tokens.approver ?? '');
  const read = sameSecret(token, tokens.read ?? '');
  if (operator && tokens.operator !== undefined) return 'operator';
  if (approver && tokens.approver !== undefined) return 'approver';
  if (read && tokens.read !== undefined) return 'read';
  return undefined;
}

/** Whether two strings are the same bytes, in constant time (`timingSafeEqual` on buffers of equal length). */
function sameBytes(a: string, b: string): boolean {
  const x = Buffer.from(a, 'utf8');
  const y = Buffer.from(b, 'utf8');
  return x.length === y.length && timingSafeEqual(x, y);
}

/**
 * The console's CSRF tokens: a random nonce and its HMAC-SHA256 under a
 * secret drawn when the console is made, over the nonce and the request's
 * session (the token it signed in with; empty when the console has none).
 * So a token is one this console minted, for this session: an empty one, one
 * a page chose and set as a cookie, or one another console (or this one
 * before a restart) minted is refused.
 */
export class CsrfTokens {
  private readonly secret = randomBytes(32);

  /** A fresh token for `session`. */
  mint(session: string): string {
    const nonce = randomBytes(18).toString('base64url');
    return `${nonce}.${this.mac(nonce, session)}`;
  }

  /** Whether `token` is one {@link mint} made for `session`, its MAC compared in constant time. */
  valid(token: string | undefined, session: string): boolean {
    const match = token === undefined ? null : /^([A-Za-z0-9_-]{24})\.([A-Za-z0-9_-]{43})$/.exec(token);
    if (!match) return false;
    return sameBytes(match[2]!, this.mac(match[1]!, session));
  }

  private mac(nonce: string, session: string): string {
    return createHmac('sha256', this.secret).update(`${nonce}\0${session}`, 'utf8').digest('base64url');
  }
}

/** A `Set-Cookie` value: HttpOnly, SameSite=Strict, on the console's path; Secure when the request came over TLS. */
export function cookieHeader(req: IncomingMessage, name: string, value: string, path: string, maxAgeSeconds?: number): string {
  const secure = (req.socket as { encrypted?: boolean }).encrypted === true || req.headers['x-forwarded-proto'] === 'https';
  return [
    `${name}=${encodeURIComponent(value)}`,
    `Path=${path === '' ? '/' : path}`,
    'HttpOnly',
    'SameSite=Strict',
    ...(secure ? ['Secure'] : []),
    ...(maxAgeSeconds !== undefined ? [`Max-Age=${maxAgeSeconds}`] : []),
  ].join('; ');
}

/**
 * Whether a write came from the console's own pages: its `Origin` (when the
 * browser sent one) names this very host, `Sec-Fetch-Site` (when sent) is not
 * cross-site, the request's CSRF cookie is a token this console minted for
 * this session, and the form's CSRF field is that same token.
 * Returns the reason it did not, or `undefined`.
 */
export function csrfProblem(
  req: IncomingMessage,
  host: HostName,
  formToken: string | undefined,
  csrf: CsrfTokens,
  session: string,
): string | undefined {
  const origin = req.headers.origin;
  if (origin !== undefined && origin !== 'null') {
    let originHost: string | undefined;
    try {
      originHost = new URL(origin).host;
    } catch {
      originHost = undefined;
    }
    if (originHost === undefined || originHost !== hostText(host)) return `the request came from another origin (${origin})`;
  } else if (origin === 'null') {
    return 'the request came from an opaque origin';
  }
  const site = req.headers['sec-fetch-site'];
  if (site === 'cross-site' || site === 'same-site') return `the browser says the request is ${site}`;
  const cookie = cookies(req).get(CSRF_COOKIE);
  if (cookie === undefined || !csrf.valid(cookie, session) || formToken === undefined || !sameBytes(formToken, cookie)) {
    return 'the form is missing its CSRF token, or it is not one this console issued (reload the page and try again)';
  }
  return undefined;
}

/** The Content-Security-Policy of every answer: nothing runs, styles only from the console's stylesheet. */
export const CONTENT_SECURITY_POLICY =
  "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

/** Sets the headers every answer carries. */
export function setSecurityHeaders(res: ServerResponse): void {
  res.setHeader('Content-Security-Policy', CONTENT_SECURITY_POLICY);
  res.setHeader('X-Content-Type-Options', 'nosniff');
  res.setHeader('X-Frame-Options', 'DENY');
  // same-origin, not no-referrer: with no-referrer a browser sends `Origin: null` on the console's own form posts.
  res.setHeader('Referrer-Policy', 'same-origin');
  res.setHeader('Cache-Control', 'no-store');
  res.setHeader('Cross-Origin-Opener-Policy', 'same-origin');
  res.setHeader('Cross-Origin-Resource-Policy', 'same-origin');
}
