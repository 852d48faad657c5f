/**
 * Requests to a console as an attacker writes them: any `Host` (node:http's
 * client sends the one given), or bytes straight onto a socket for what no
 * client library sends (absolute-form targets, two Host headers, none).
 */
import { request as httpRequest } from 'node:http';
import { connect } from 'node:net';
import { expect } from 'vitest';

/** An answer: status, headers and body. */
export interface Answer {
  readonly status: number;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly body: string;
}

/** One request to 127.0.0.1:`port` with exactly these headers (`host` among them when given). */
export function send(
  port: number,
  path: string,
  options: { method?: string; headers?: Record<string, string>; body?: string } = {},
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = {
      ...(options.body !== undefined ? { 'content-type': 'application/x-www-form-urlencoded' } : {}),
      ...options.headers,
    };
    const req = httpRequest(
      { host: '127.0.0.1', port, path, method: options.method ?? 'GET', headers, setHost: headers['host'] === undefined },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (body += chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
      },
    );
    req.on('error', reject);
    req.end(options.body);
  });
}

/** Raw bytes to 127.0.0.1:`port`; the status line's code and the body of the answer. */
export function sendRaw(port: number, text: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    // Written, not ended: a client that half-closes may see the server drop it before a slow answer; Connection: close (or HTTP/1.0) ends it.
    const socket = connect(port, '127.0.0.1', () => socket.write(text));
    let data = '';
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => (data += chunk));
    socket.on('error', reject);
    socket.on('close', () => {
      const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(data)?.[1] ?? 0);
      resolve({ status, body: data.slice(data.indexOf('\r\n\r\n') + 4) });
    });
  });
}

/** The `name=value` pairs of an answer's Set-Cookie headers, as a Cookie header sends them back. */
export function cookieOf(answer: Answer): string {
  const set = answer.headers['set-cookie'];
  return (Array.isArray(set) ? set : set === undefined ? [] : [set]).map((c) => c.split(';')[0]).join('; ');
}

/** The CSRF token a page's forms carry. */
export function csrfFieldOf(body: string): string | undefined {
  return /name="csrf" value="([^"]*)"/.exec(body)?.[1];
}

/** The CSRF cookie the console on `port` issues to `headers`' session, and the token it holds (the one its forms carry). */
export async function issuedSession(port: number, headers: Record<string, string> = {}): Promise<{ cookie: string; csrf: string }> {
  const res = await send(port, '/', { headers });
  expect(res.status).toBe(200);
  const csrf = /trc_console_csrf=([^;]+)/.exec(cookieOf(res))![1]!;
  return { cookie: cookieOf(res), csrf };
}
