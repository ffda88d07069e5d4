/**
 * Addresses the egress gate never dials unless the operator's `runtime.egress.allowPrivate` names
 * them: this host's own interface addresses and every IANA special-purpose range (private,
 * loopback, link-local, documentation, benchmarking, multicast, reserved, ...). IPv6 forms that
 * carry an IPv4 address (mapped, NAT64, 6to4) are judged by that address as well.
 */
import { networkInterfaces } from 'node:os';
import { inNet, parseCidr, parseIp, sameBytes, type Cidr } from './ip-address.js';

/**
 * Why an address is off limits, as a phrase for the refusal ("a loopback address"), or undefined
 * for an ordinary public one. Something that is not an address is refused: it cannot be vetted.
 */
export function refusedRange(ip: string): string | undefined {
  const bytes = parseIp(ip);
  if (!bytes) return 'not an address';
  const carrier = V4_CARRIERS.find((c) => inNet(bytes, c));
  const inner = carrier && bytes.subarray(carrier.v4At, carrier.v4At + 4);
  const direct = SPECIAL.find((n) => inNet(bytes, n));
  if (direct) return `a ${direct.kind} address`;
  const innerRange = inner && SPECIAL.find((n) => inNet(inner, n));
  if (carrier && innerRange) return `a ${carrier.kind} ${innerRange.kind} address`;
  // A host with a public address serves on it whatever it binds to 0.0.0.0.
  if (isOwnAddress(bytes) || (inner && isOwnAddress(inner))) return 'an address of this host';
  return undefined;
}

/**
 * The forms to compare with the operator's exceptions: the address, and for `::ffff:a.b.c.d` the
 * IPv4 it stands for (the same destination). NAT64 and 6to4 forms are other hosts: not included.
 */
export function addressForms(bytes: Uint8Array): Uint8Array[] {
  return inNet(bytes, MAPPED) ? [bytes, bytes.subarray(12)] : [bytes];
}

type Range = Cidr & { kind: string };

function range(cidr: string, kind: string): Range {
  const parsed = parseCidr(cidr);
  if (!parsed) throw new Error(`bad built-in range ${cidr}`);
  return { ...parsed, kind };
}

const SPECIAL: Range[] = [
  range('0.0.0.0/8', 'unspecified'), // Linux connects 0.0.0.0 to the host itself
  range('10.0.0.0/8', 'private'),
  range('100.64.0.0/10', 'carrier-grade NAT'),
  range('127.0.0.0/8', 'loopback'),
  range('169.254.0.0/16', 'link-local'), // cloud metadata endpoints live here
  range('172.16.0.0/12', 'private'),
  range('192.0.0.0/24', 'IETF protocol assignment'),
  range('192.0.2.0/24', 'documentation'),
  range('192.88.99.0/24', '6to4 relay'),
  range('192.168.0.0/16', 'private'),
  range('198.18.0.0/15', 'benchmarking'),
  range('198.51.100.0/24', 'documentation'),
  range('203.0.113.0/24', 'documentation'),
  range('224.0.0.0/4', 'multicast'),
  range('240.0.0.0/4', 'reserved'), // includes the broadcast address
  range('::/128', 'unspecified'),
  range('::1/128', 'loopback'),
  range('100::/64', 'discard-only'),
  range('2001:db8::/32', 'documentation'),
  range('2001::/23', 'IETF protocol assignment'),
  range('fc00::/7', 'private'),
  range('fe80::/10', 'link-local'),
  range('fec0::/10', 'site-local'),
  range('ff00::/8', 'multicast'),
];

/** IPv6 blocks with an IPv4 address inside, and where it sits. */
const MAPPED = range('::ffff:0:0/96', 'IPv4-mapped');
const V4_CARRIERS: (Range & { v4At: number })[] = [
  { ...MAPPED, v4At: 12 },
  { ...range('::/96', 'IPv4-compatible'), v4At: 12 },
  { ...range('64:ff9b::/96', 'NAT64'), v4At: 12 },
  { ...range('2002::/16', '6to4'), v4At: 2 },
];

/** Interfaces come and go (DHCP, VPNs); a second-old list is fresh enough and costs one syscall. */
const OWN_TTL_MS = 1_000;
let own: { at: number; addresses: Uint8Array[] } | undefined;

function isOwnAddress(bytes: Uint8Array): boolean {
  const now = Date.now();
  if (!own || now - own.at > OWN_TTL_MS) {
    const addresses = Object.values(networkInterfaces())
      .flatMap((list) => list ?? [])
      .map((i) => parseIp(i.address))
      .filter((b): b is Uint8Array => b !== undefined);
    own = { at: now, addresses };
  }
  return own.addresses.some((a) => sameBytes(a, bytes));
}
