/**
 * The host names an HTTP listener of this package (the console, the MCP
 * gateway) answers for: loopback (`localhost`, `127.0.0.0/8`, `[::1]`) and the
 * names an operator configured, read strictly from the request's `Host`
 * header and from an absolute-form request target. A web page that rebinds
 * its own name to 127.0.0.1 (DNS rebinding) sends its own name as `Host`, so
 * it is refused before anything is read.
 */
import type { IncomingMessage } from 'node:http';
import { isIPv6 } from 'node:net';
import { networkInterfaces } from 'node:os';

/** Makes the error for an allowed-host entry that is not a host; each listener refuses under its own code. */
export type HostRefusal = (message: string) => Error;

/** A host as a listener compares it: the name lowercased (an IPv6 address bracketed and compressed), and the port if one was written. */
export interface HostName {
  readonly name: string;
  readonly port: number | undefined;
}

/** One DNS label or IPv4 part: letters, digits, `-` and `_`; no empty label, so no leading or trailing dot. */
const NAME = /^[a-z0-9_-]+(?:\.[a-z0-9_-]+)*$/;
const IPV4_PART = '(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])';
const LOOPBACK_IPV4 = new RegExp(`^127(?:\\.${IPV4_PART}){3}$`);
const HOST = /^(\[[^\]]*\]|[^:[\]]*)(?::([^:]*))?$/;

/** `[::1]` for any spelling of an IPv6 address (`[0:0::1]`, `[::0001]`), as browsers send it; `undefined` for anything else. */
function canonicalIpv6(inner: string): string | undefined {
  if (!isIPv6(inner) || inner.includes('%')) return undefined;
  return new URL(`http://[${inner}]/`).hostname;
}

/**
 * Reads `host[:port]` exactly as a browser writes it in a `Host` header: a
 * name of letters, digits, dots, `-` and `_` (compared in lower case; no
 * trailing dot, no empty label), or an IPv6 address in brackets; a port of
 * 1 to 65535 without leading zeros. Anything else (empty, spaces, userinfo,
 * a zone id, non-ASCII, an empty port) is `undefined`.
 */
export function parseHost(text: string): HostName | undefined {
  const match = HOST.exec(text.toLowerCase());
  if (!match) return undefined;
  const [, host = '', portText] = match;
  let port: number | undefined;
  if (portText !== undefined) {
    if (!/^[1-9][0-9]{0,4}$/.test(portText) || Number(portText) > 65535) return undefined;
    port = Number(portText);
  }
  if (host.startsWith('[')) {
    const name = canonicalIpv6(host.slice(1, -1));
    return name === undefined ? undefined : { name, port };
  }
  return NAME.test(host) ? { name: host, port } : undefined;
}

/** True for `localhost`, `127.x.y.z` (dotted decimal) and `[::1]`: names only this machine resolves, which no DNS answer can change. */
export function isLoopbackName(name: string): boolean {
  return name === 'localhost' || name === '[::1]' || LOOPBACK_IPV4.test(name);
}

/** True for an address (or `localhost`) only this machine can reach, written as `listen` takes it: `127.0.0.1`, `::1`, `localhost`. */
export function isLoopbackHost(host: string): boolean {
  const parsed = isIPv6(host) ? parseHost(`[${host}]`) : parseHost(host);
  return parsed !== undefined && parsed.port === undefined && isLoopbackName(parsed.name);
}

/**
 * Reads one configured host: a name or address, with or without a port
 * (without, it matches any port). An IPv6 address may be written with or
 * without its brackets. Throws the error `refuse` makes for anything that
 * is not one (a URL, a wildcard, a trailing dot, an empty string).
 */
export function parseAllowedHost(entry: string, refuse: HostRefusal): HostName {
  const text = typeof entry === 'string' ? entry.trim() : '';
  const parsed = isIPv6(text) ? parseHost(`[${text}]`) : parseHost(text);
  if (parsed === undefined) {
    throw refuse(
      `an allowed host must be a host name or address with an optional port (console.example.com, 10.0.0.5:8787, [fd00::5]), got ${JSON.stringify(entry)}`,
    );
  }
  return parsed;
}

/** The hosts one listener answers for. */
export class HostAllowList {
  private readonly entries: readonly HostName[];

  /** Loopback and `allowed` (none when left out); throws the error `refuse` makes for an entry that is not a host. */
  constructor(allowed: readonly string[] | undefined, refuse: HostRefusal) {
    const entries = allowed ?? [];
    if (!Array.isArray(entries)) throw refuse('allowedHosts must be a list of host names');
    this.entries = entries.map((entry) => parseAllowedHost(entry, refuse));
  }

  /** Whether a parsed `Host` is loopback or configured (by name alone, or by name and that port). */
  allows(host: HostName): boolean {
    if (isLoopbackName(host.name)) return true;
    return this.entries.some((e) => e.name === host.name && (e.port === undefined || e.port === host.port));
  }

  /**
   * Why the listener must not answer this request, or `undefined`: no `Host`
   * (an HTTP/1.0 request), more than one, one that is not a host, or one
   * (or an absolute-form target's authority) that is neither loopback nor
   * configured. Returns the request's `Host`, parsed, when it passes.
   */
  check(req: IncomingMessage): { host: HostName } | { problem: string } {
    let count = 0;
    for (let i = 0; i < req.rawHeaders.length; i += 2) if (req.rawHeaders[i]!.toLowerCase() === 'host') count++;
    const header = req.headers.host;
    if (count > 1) return { problem: 'the request has more than one Host header' };
    if (header === undefined || header === '') return { problem: 'the request names no host (no Host header)' };
    const host = parseHost(header);
    if (host === undefined) return { problem: `the Host header ${shown(header)} is not a host name` };
    if (!this.allows(host)) return { problem: `it was sent to ${shown(header)}` };
    const url = req.url ?? '/';
    if (!url.startsWith('/')) {
      // An absolute-form target (`GET http://name/ HTTP/1.1`) names the host that counts; no browser sends one to a server.
      const authority = /^https?:\/\/([^/?#]*)/i.exec(url)?.[1];
      const target = authority === undefined ? undefined : parseHost(authority);
      if (target === undefined) return { problem: `the request target ${shown(url)} is not a path` };
      if (!this.allows(target)) return { problem: `it was sent to ${shown(authority!)}` };
    }
    return { host };
  }
}

const shown = (text: string) => JSON.stringify(text.length > 100 ? `${text.slice(0, 100)}…` : text);

/** A host as a browser writes it in `Origin` and `Host`: `name` or `name:port`. */
export function hostText(host: HostName): string {
  return host.port === undefined ? host.name : `${host.name}:${host.port}`;
}

/**
 * The hosts a listener bound to `host` answers for without being told: none
 * on loopback; the bound address or name itself; for a wildcard, the
 * addresses of this machine's interfaces as they are at start (loopback's
 * aside). Addresses are safe to add: DNS rebinding needs a name, since a
 * browser sends an address as `Host` only when the user typed it.
 */
export function boundHosts(host: string): string[] {
  if (isLoopbackHost(host)) return [];
  if (host === '0.0.0.0' || host === '::') {
    const addresses = Object.values(networkInterfaces()).flatMap((list) => (list ?? []).map((a) => a.address));
    return [...new Set(addresses.filter((a) => !isLoopbackHost(a)))];
  }
  return [host];
}
