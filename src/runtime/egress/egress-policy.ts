/**
 * The egress gate's rules (design.md §4): which targets an app may reach (`egress.allowed_hosts`,
 * names and ports) and which resolved addresses are off limits unless the operator's
 * `runtime.egress.allowPrivate` says otherwise. Pure functions (bar the cached interface list),
 * so the gate and its tests share one definition.
 */
import { addressForms, refusedRange } from './egress-ranges.js';
import { nameMatches, normalizeHost, parseHostEntry, type HostEntry } from './egress-hosts.js';
import { inNet, parseCidr, parseIp, type Cidr } from './ip-address.js';

export { normalizeHost, targetAllowed } from './egress-hosts.js';
export { parseIp } from './ip-address.js';

/** True when some entry's name part matches `host`, whatever its port. */
export function hostAllowed(host: string, entries: readonly string[]): boolean {
  return entries.some((raw) => {
    const entry = parseHostEntry(raw);
    return entry !== undefined && nameMatches(host, entry.host);
  });
}

/** Why an address may not be dialled ("a loopback address", "an address of this host"), if so. */
export function privateRange(ip: string): string | undefined {
  return refusedRange(ip);
}

/** True for this host's own addresses and every special-purpose (non-public) range. */
export function isPrivateAddress(ip: string): boolean {
  return refusedRange(ip) !== undefined;
}

/**
 * The operator's exceptions: names (wildcards as in allowed_hosts), addresses and CIDRs, an entry
 * in `host:port` form only for that port (the general lane's package index is one such).
 */
export interface PrivateExceptions {
  names: HostEntry[];
  nets: (Cidr & { port?: number })[];
  /** Entries that are neither a name nor an address/CIDR; they never match anything. */
  invalid: string[];
}

export function compileExceptions(entries: readonly string[]): PrivateExceptions {
  const out: PrivateExceptions = { names: [], nets: [], invalid: [] };
  for (const raw of entries) {
    const cidr = raw.includes('/') ? parseCidr(normalizeHost(raw)) : undefined;
    const entry = cidr ? undefined : parseHostEntry(raw);
    const bytes = entry && parseIp(entry.host);
    if (cidr) out.nets.push(cidr);
    else if (entry && bytes) out.nets.push({ bytes, prefix: bytes.length * 8, port: entry.port });
    else if (entry) out.names.push(entry);
    else out.invalid.push(raw);
  }
  return out;
}

/** True when the operator lets `host:port` reach the otherwise refused `address`. */
export function privateAllowed(
  target: { host: string; port: number },
  address: string,
  exceptions: PrivateExceptions,
): boolean {
  const portOk = (p: number | undefined) => p === undefined || p === target.port;
  if (exceptions.names.some((n) => portOk(n.port) && nameMatches(target.host, n.host))) return true;
  const bytes = parseIp(address);
  if (!bytes) return false;
  // An exception for 127.0.0.1 also covers ::ffff:127.0.0.1: it is the same destination.
  const forms = addressForms(bytes);
  return exceptions.nets.some((n) => portOk(n.port) && forms.some((f) => inNet(f, n)));
}
