/**
 * Cross-origin requests from browsers: a page on any site may make a
 * visitor's browser send a request to a listener on loopback, and the
 * browser says where the page came from in `Origin`. A listener that serves
 * programs, not pages of its own, refuses every origin it was not told of.
 */
import type { IncomingMessage } from 'node:http';

/**
 * An origin as `new URL(origin).origin` writes it (`http://localhost:6274`),
 * or `undefined` for text that is not an http(s) origin alone (a path, a
 * query, credentials, another scheme).
 */
export function normalizedOrigin(text: string): string | undefined {
  try {
    const url = new URL(text);
    if (url.protocol !== 'http:' && url.protocol !== 'https:') return undefined;
    const bare = url.username === '' && url.password === '' && url.pathname === '/' && url.search === '' && url.hash === '';
    return bare && !/[/?#]$/.test(text.trim()) ? url.origin : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Why a request must not be served for its `Origin`, or `undefined`: none
 * sent (a program, not a page) passes; one of `allowed` (compared as
 * {@link normalizedOrigin} writes them) passes; any other, `null` included,
 * is refused.
 */
export function originProblem(req: IncomingMessage, allowed: readonly string[]): string | undefined {
  const origin = req.headers.origin;
  if (origin === undefined) return undefined;
  const normal = normalizedOrigin(origin);
  if (normal !== undefined && allowed.includes(normal)) return undefined;
  const shown = JSON.stringify(origin.length > 100 ? `${origin.slice(0, 100)}…` : origin);
  return `the request came from a web page at ${shown}, an origin this listener does not serve`;
}
