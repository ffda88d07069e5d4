/**
 * The egress gate's rules (design.md §4): which host names an app may reach (`egress.allowed_hosts`)
 * and which resolved addresses are off limits unless the operator's `runtime.egress.allowPrivate`
 * says otherwise. Pure functions, so the gate and its tests share one definition.
 */

/** Lower-cased, without IPv6 brackets or the trailing dot of a fully qualified name. */
export function normalizeHost(host: string): string {
  let h = host.trim().toLowerCase();
  if (h.startsWith('[') && h.endsWith(']')) h = h.slice(1, -1);
  if (h.endsWith('.')) h = h.slice(0, -1);
  return h;
}

/**
 * True when `host` is on the list: exact names, `*.example.com` for subdomains at any depth (never
 * the apex, which an operator must list on its own), IP literals by value (`::1` = `0:0::1`).
 * A bare `*` is not a wildcard: "everything" must not be one typo away.
 */
export function hostAllowed(host: string, allowedHosts: readonly string[]): boolean {
  const h = normalizeHost(host);
  if (h === '') return false;
  const ip = parseIp(h);
  return allowedHosts.some((raw) => {
    const entry = normalizeHost(raw);
    if (entry.startsWith('*.')) {
      const suffix = entry.slice(1);
      return (
        ip === undefined && suffix.length > 1 && h.length > suffix.length && h.endsWith(suffix)
      );
    }
    const entryIp = parseIp(entry);
    if (ip || entryIp) return ip !== undefined && entryIp !== undefined && sameBytes(ip, entryIp);
    return entry === h;
  });
}

type Net = { bytes: Uint8Array; prefix: number; kind: string };

const net = (cidr: string, kind: string): Net => {
  const parsed = parseCidr(cidr);
  if (!parsed) throw new Error(`bad built-in range ${cidr}`);
  return { ...parsed, kind };
};

const V4_REFUSED = [
  net('0.0.0.0/8', 'unspecified'), // Linux connects 0.0.0.0 to the host itself
  net('10.0.0.0/8', 'private'),
  net('100.64.0.0/10', 'carrier-grade NAT'),
  net('127.0.0.0/8', 'loopback'),
  net('169.254.0.0/16', 'link-local'), // cloud metadata endpoints live here
  net('172.16.0.0/12', 'private'),
  net('192.168.0.0/16', 'private'),
  net('224.0.0.0/4', 'multicast'),
  net('240.0.0.0/4', 'reserved'), // includes the broadcast address
];
const V6_REFUSED = [
  net('::/128', 'unspecified'),
  net('::1/128', 'loopback'),
  net('fc00::/7', 'private'),
  net('fe80::/10', 'link-local'),
  net('fec0::/10', 'site-local'),
  net('ff00::/8', 'multicast'),
];
/** IPv6 forms that carry an IPv4 address in their last 32 bits: judged by that address. */
const MAPPED = net('::ffff:0:0/96', 'IPv4-mapped');
const V4_CARRIERS = [MAPPED, net('::/96', 'IPv4-compatible'), net('64:ff9b::/96', 'NAT64')];

/** Why an address is off limits (`loopback`, `private`, ...), or undefined for a public one. */
export function privateRange(ip: string): string | undefined {
  const bytes = parseIp(ip);
  // Fail closed: something that is not an address cannot be vetted.
  if (!bytes) return 'unparseable';
  const direct = [...V4_REFUSED, ...V6_REFUSED].find((n) => inNet(bytes, n));
  if (direct) return direct.kind;
  const carrier = V4_CARRIERS.find((n) => inNet(bytes, n));
  const inner = carrier && V4_REFUSED.find((n) => inNet(bytes.subarray(12), n));
  return carrier && inner ? `${carrier.kind} ${inner.kind}` : undefined;
}

/** True for private, loopback, link-local, unspecified, CGNAT, multicast or reserved addresses. */
export function isPrivateAddress(ip: string): boolean {
  return privateRange(ip) !== undefined;
}

/** The operator's exceptions: host names (wildcards as in allowed_hosts), addresses and CIDRs. */
export interface PrivateExceptions {
  names: string[];
  nets: Net[];
  /** Entries that are neither a name nor an address/CIDR; they never match anything. */
  invalid: string[];
}

export function compileExceptions(entries: readonly string[]): PrivateExceptions {
  const out: PrivateExceptions = { names: [], nets: [], invalid: [] };
  for (const raw of entries) {
    const entry = normalizeHost(raw);
    const cidr = parseCidr(
      entry.includes('/') ? entry : `${entry}/${entry.includes(':') ? 128 : 32}`,
    );
    if (cidr) out.nets.push({ ...cidr, kind: 'allowPrivate' });
    else if (/^(\*\.)?[a-z0-9_-]+(\.[a-z0-9_-]+)*$/.test(entry)) out.names.push(entry);
    else out.invalid.push(raw);
  }
  return out;
}

/** True when the operator lets `host` reach the private `address`. */
export function privateAllowed(
  host: string,
  address: string,
  exceptions: PrivateExceptions,
): boolean {
  if (hostAllowed(host, exceptions.names)) return true;
  const bytes = parseIp(address);
  if (!bytes) return false;
  const candidates = [bytes];
  // An exception for 127.0.0.1 also covers ::ffff:127.0.0.1: it is the same destination.
  if (inNet(bytes, MAPPED)) candidates.push(bytes.subarray(12));
  return exceptions.nets.some((n) => candidates.some((c) => inNet(c, n)));
}

function parseCidr(text: string): { bytes: Uint8Array; prefix: number } | undefined {
  const [addr = '', bits = '', extra] = text.split('/');
  const bytes = parseIp(addr);
  if (!bytes || extra !== undefined || !/^\d{1,3}$/.test(bits)) return undefined;
  const prefix = Number(bits);
  return prefix <= bytes.length * 8 ? { bytes, prefix } : undefined;
}

function inNet(bytes: Uint8Array, n: { bytes: Uint8Array; prefix: number }): boolean {
  if (bytes.length !== n.bytes.length) return false;
  for (let bit = 0; bit < n.prefix; bit += 8) {
    const mask = 0xff << (8 - Math.min(8, n.prefix - bit));
    if ((((bytes[bit / 8] ?? 0) ^ (n.bytes[bit / 8] ?? 0)) & mask & 0xff) !== 0) return false;
  }
  return true;
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((v, i) => v === b[i]);
}

/**
 * Strict dotted-quad IPv4 (4 bytes) or IPv6 (16 bytes). Octal or short IPv4 forms (`010.1`,
 * `2130706433`) are not literals here; if they reach the resolver, its answer is vetted instead.
 */
export function parseIp(text: string): Uint8Array | undefined {
  return parseIpv4(text) ?? parseIpv6(text);
}

function parseIpv4(text: string): Uint8Array | undefined {
  const parts = text.split('.');
  if (parts.length !== 4) return undefined;
  if (!parts.every((p) => /^(0|[1-9]\d{0,2})$/.test(p) && Number(p) <= 255)) return undefined;
  return Uint8Array.from(parts, Number);
}

function parseIpv6(text: string): Uint8Array | undefined {
  // The zone (`%eth0`) picks an interface, not a different range.
  let rest = text.replace(/%[^%]*$/, '');
  if (!/^[0-9a-f:.]+$/i.test(rest) || !rest.includes(':')) return undefined;
  let v4: Uint8Array | undefined;
  if (rest.includes('.')) {
    const at = rest.lastIndexOf(':');
    v4 = parseIpv4(rest.slice(at + 1));
    if (!v4) return undefined;
    rest = `${rest.slice(0, at + 1)}0:0`;
  }
  const halves = rest.split('::');
  if (halves.length > 2) return undefined;
  const groups = (s: string | undefined) => (s ? s.split(':') : []);
  const head = groups(halves[0]);
  const tail = groups(halves[1]);
  const count = head.length + tail.length;
  if (halves.length === 2 ? count > 7 : count !== 8) return undefined;
  if (![...head, ...tail].every((g) => /^[0-9a-f]{1,4}$/i.test(g))) return undefined;
  const out = new Uint8Array(16);
  const put = (g: string, i: number) => {
    const v = parseInt(g, 16);
    out[i * 2] = v >> 8;
    out[i * 2 + 1] = v & 0xff;
  };
  head.forEach((g, i) => put(g, i));
  tail.forEach((g, i) => put(g, 8 - tail.length + i));
  if (v4) out.set(v4, 12);
  return out;
}
