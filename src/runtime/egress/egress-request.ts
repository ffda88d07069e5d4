/**
 * Parsing of the one HTTP proxy request head the egress gate reads per connection. Deliberately
 * strict: anything the gate cannot judge with certainty is a 400, never a guess.
 */

import { parseIp } from './egress-policy.js';

/** Longest request head (request line + headers) the gate reads before refusing. */
export const MAX_HEAD_BYTES = 16 * 1024;

export type HeadScan =
  { state: 'partial' } | { state: 'too-large' } | { state: 'complete'; head: string; rest: Buffer };

/** Looks for the blank line that ends the head; `rest` is whatever the client sent after it. */
export function scanHead(buf: Buffer): HeadScan {
  // latin1 maps bytes 1:1, so indexes in the text are indexes in the buffer.
  const text = buf.subarray(0, MAX_HEAD_BYTES + 4).toString('latin1');
  const end = /\r?\n\r?\n/.exec(text);
  if (!end) return buf.length > MAX_HEAD_BYTES ? { state: 'too-large' } : { state: 'partial' };
  if (end.index > MAX_HEAD_BYTES) return { state: 'too-large' };
  const after = end.index + end[0].length;
  return { state: 'complete', head: text.slice(0, end.index), rest: buf.subarray(after) };
}

export interface Target {
  /** As written by the client (case, trailing dot), brackets removed from IPv6. */
  host: string;
  port: number;
}

export type EgressRequest =
  | ({ kind: 'connect' } & Target)
  | ({
      kind: 'forward';
      method: string;
      upstreamHead: string;
      /** The head announces a body (a Content-Length above 0, or a Transfer-Encoding). */
      hasBody: boolean;
    } & Target);

export type ParseResult = { ok: true; request: EgressRequest } | { ok: false; reason: string };

const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
const REQUEST_LINE = /^(\S+) (\S+) HTTP\/(1\.[01])$/;
const HEADER_LINE = /^([^:\s]+):[ \t]*(.*?)[ \t]*$/;
/** Printable ASCII only: a request target with controls or spaces is not something to forward. */
const VISIBLE = /^[\x21-\x7e]+$/;
const CONTROL = /[\x00-\x08\x0a-\x1f\x7f]/;

/**
 * Hop-by-hop headers (RFC 9110 §7.6.1) plus the legacy ones. Transfer-Encoding is not among them
 * here: the gate relays the body byte for byte, so the framing the client chose must travel with it.
 */
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'te', 'trailer', 'upgrade', 'host']);
const FRAMING = new Set(['content-length', 'transfer-encoding']);

export function parseHead(head: string): ParseResult {
  const [requestLine = '', ...headerLines] = head.split(/\r?\n/);
  const line = REQUEST_LINE.exec(requestLine);
  if (!line) return bad('malformed request line');
  const [, method = '', target = '', version = ''] = line;
  if (!TOKEN.test(method) || !VISIBLE.test(target)) return bad('malformed request line');
  const headers: [string, string][] = [];
  for (const h of headerLines) {
    const m = HEADER_LINE.exec(h);
    if (!m || !TOKEN.test(m[1] ?? '') || CONTROL.test(m[2] ?? '')) return bad('malformed header');
    headers.push([m[1] ?? '', m[2] ?? '']);
  }

  if (method === 'CONNECT') {
    const t = parseAuthority(target, undefined);
    return t ? { ok: true, request: { kind: 'connect', ...t } } : bad('CONNECT needs host:port');
  }
  const uri = /^http:\/\/([^/?]+)([/?].*)?$/i.exec(target);
  if (!uri || target.includes('#')) return bad(`${method} needs an absolute http:// URI`);
  const authority = uri[1] ?? '';
  const t = parseAuthority(authority, 80);
  if (!t) return bad('bad host or port in the URI');
  const path = uri[2] === undefined ? '/' : uri[2].startsWith('?') ? `/${uri[2]}` : uri[2];
  return {
    ok: true,
    request: {
      kind: 'forward',
      method,
      ...t,
      upstreamHead: originHead(method, path, version, authority, headers),
      hasBody: headers.some(([n, v]) => {
        const name = n.toLowerCase();
        return name === 'transfer-encoding' || (name === 'content-length' && v.trim() !== '0');
      }),
    },
  };
}

/** The request as the origin server expects it: origin-form, its own Host, no proxy chatter. */
function originHead(
  method: string,
  path: string,
  version: string,
  authority: string,
  headers: [string, string][],
): string {
  const named = headers
    .filter(([n]) => n.toLowerCase() === 'connection')
    .flatMap(([, v]) => v.split(','))
    .map((v) => v.trim().toLowerCase())
    .filter((v) => !FRAMING.has(v));
  const drop = new Set([...HOP_BY_HOP, ...named]);
  const kept = headers.filter(([n]) => {
    const lower = n.toLowerCase();
    return !drop.has(lower) && !lower.startsWith('proxy-');
  });
  const lines = [
    `${method} ${path} HTTP/${version}`,
    `Host: ${authority}`,
    ...kept.map(([n, v]) => `${n}: ${v}`),
    // One request per connection keeps the gate a plain pipe with nothing to re-frame.
    'Connection: close',
  ];
  return `${lines.join('\r\n')}\r\n\r\n`;
}

/** `host:port` (port required when `defaultPort` is undefined); IPv6 in brackets. */
export function parseAuthority(text: string, defaultPort: number | undefined): Target | undefined {
  const m = /^(?:\[([0-9a-fA-F:.]+)\]|([^[\]:@]+))(?::(\d{1,5}))?$/.exec(text);
  if (!m) return undefined;
  const host = m[1] ?? m[2] ?? '';
  const port = m[3] === undefined ? defaultPort : Number(m[3]);
  if (port === undefined || port < 1 || port > 65535) return undefined;
  if (m[1] !== undefined ? !parseIp(host) : !validName(host)) return undefined;
  return { host, port };
}

/** DNS-shaped: labels of letters, digits, `-`, `_`; one trailing dot allowed. */
function validName(host: string): boolean {
  const name = host.endsWith('.') ? host.slice(0, -1) : host;
  if (name.length === 0 || name.length > 253) return false;
  return name.split('.').every((label) => /^[A-Za-z0-9_-]{1,63}$/.test(label));
}

function bad(reason: string): ParseResult {
  return { ok: false, reason };
}
