/**
 * IP literals and CIDRs as bytes, for the egress gate's checks. Strict on purpose: what is not a
 * plain dotted quad or a valid IPv6 text is not an address here, so nothing odd slips past as one.
 */

/** An address block: `bytes` (4 or 16) and the prefix length in bits. */
export interface Cidr {
  bytes: Uint8Array;
  prefix: number;
}

/**
 * Strict dotted-quad IPv4 (4 bytes) or IPv6 (16 bytes). Octal or short IPv4 forms (`010.1`,
 * `2130706433`) are not literals here; if they reach the resolver, its answer is vetted instead.
 */
export function parseIp(text: string): Uint8Array | undefined {
  return parseIpv4(text) ?? parseIpv6(text);
}

/** `addr/bits`; undefined when either part is not valid. */
export function parseCidr(text: string): Cidr | undefined {
  const [addr = '', bits = '', extra] = text.split('/');
  const bytes = parseIp(addr);
  if (!bytes || extra !== undefined || !/^\d{1,3}$/.test(bits)) return undefined;
  const prefix = Number(bits);
  return prefix <= bytes.length * 8 ? { bytes, prefix } : undefined;
}

export function inNet(bytes: Uint8Array, n: Cidr): boolean {
  if (bytes.length !== n.bytes.length) return false;
  for (let bit = 0; bit < n.prefix; bit += 8) {
    const mask = 0xff << (8 - Math.min(8, n.prefix - bit));
    if ((((bytes[bit / 8] ?? 0) ^ (n.bytes[bit / 8] ?? 0)) & mask & 0xff) !== 0) return false;
  }
  return true;
}

export function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((v, i) => v === b[i]);
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
