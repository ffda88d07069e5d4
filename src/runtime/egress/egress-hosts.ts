/**
 * The syntax of an `egress.allowed_hosts` entry, shared by deploy validation and the egress gate so
 * both read an entry the same way: `name`, `*.domain` (subdomains, never the apex), an IPv4
 * literal, an IPv6 literal (`::1` or `[::1]`), each optionally with a port (`host:8443`,
 * `*.example.org:8443`, `[::1]:8080`). Without a port an entry allows ports 80 and 443 only.
 */
import { parseIp, sameBytes } from './ip-address.js';

export interface HostEntry {
  /** Lower-cased, without IPv6 brackets or a trailing dot; may start with `*.`. */
  host: string;
  /** Undefined: the default ports. */
  port?: number;
}

/** What an entry without a port allows: plain HTTP and HTTPS. */
export const DEFAULT_EGRESS_PORTS: readonly number[] = [80, 443];

const NAME =
  /^(\*\.)?([a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?\.)*[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?$/;

/** The entry, or undefined when it is not one of the forms above. */
export function parseHostEntry(text: string): HostEntry | undefined {
  const t = text.trim().toLowerCase();
  const bracketed = /^\[([^\]]+)\](?::([^:]*))?$/.exec(t);
  if (bracketed) {
    const [, v6 = '', port] = bracketed;
    return v6.includes(':') && parseIp(v6) ? withPort(v6, port) : undefined;
  }
  // Two colons or more: a bare IPv6 literal, which cannot carry a port without brackets.
  if ((t.match(/:/g) ?? []).length > 1) return parseIp(t) ? { host: t } : undefined;
  const [name = '', port] = t.split(':');
  const host = name.endsWith('.') ? name.slice(0, -1) : name;
  if (host.length === 0 || host.length > 253 || !NAME.test(host)) return undefined;
  return withPort(host, port);
}

/** True when `host:port` is allowed by one of the entries (unparseable entries match nothing). */
export function targetAllowed(host: string, port: number, entries: readonly string[]): boolean {
  return entries.some((raw) => {
    const entry = parseHostEntry(raw);
    if (!entry) return false;
    const ports = entry.port === undefined ? DEFAULT_EGRESS_PORTS : [entry.port];
    return ports.includes(port) && nameMatches(host, entry.host);
  });
}

/** Lower-cased, without IPv6 brackets or the trailing dot of a fully qualified name. */
export function normalizeHost(host: string): string {
  let h = host.trim().toLowerCase();
  if (h.startsWith('[') && h.endsWith(']')) h = h.slice(1, -1);
  if (h.endsWith('.')) h = h.slice(0, -1);
  return h;
}

/**
 * Exact names, `*.example.com` for subdomains at any depth (never the apex, which must be listed
 * on its own), IP literals by value (`::1` = `0:0::1`). A bare `*` is not an entry at all:
 * "everything" must not be one typo away.
 */
export function nameMatches(host: string, pattern: string): boolean {
  const h = normalizeHost(host);
  if (h === '') return false;
  const ip = parseIp(h);
  if (pattern.startsWith('*.')) {
    const suffix = pattern.slice(1);
    return ip === undefined && suffix.length > 1 && h.length > suffix.length && h.endsWith(suffix);
  }
  const patternIp = parseIp(pattern);
  if (ip || patternIp)
    return ip !== undefined && patternIp !== undefined && sameBytes(ip, patternIp);
  return pattern === h;
}

function withPort(host: string, port: string | undefined): HostEntry | undefined {
  if (port === undefined) return { host };
  if (!/^[1-9]\d{0,4}$/.test(port) || Number(port) > 65535) return undefined;
  return { host, port: Number(port) };
}
