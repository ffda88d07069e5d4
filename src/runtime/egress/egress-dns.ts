/**
 * Name resolution for the egress gate, off libuv's thread pool: `dns.lookup` (getaddrinfo) runs
 * there, next to scrypt, zlib and fs, so a burst of share-link hashing once stalled every app's
 * egress. Here a name is answered from /etc/hosts (so `localhost` and the operator's own entries
 * still work) or else by c-ares (`dns.Resolver`, its own sockets on the event loop).
 */
import { Resolver } from 'node:dns/promises';
import { readFileSync, statSync } from 'node:fs';
import { parseIp } from './ip-address.js';

export type Resolve = (host: string) => Promise<string[]>;

export interface ResolverOptions {
  /** `ip` or `ip:port` servers; default: the system's (/etc/resolv.conf). */
  servers?: string[];
  /** Per attempt; c-ares tries twice. */
  attemptTimeoutMs?: number;
  hostsFile?: string;
}

/** Every address of `host` (A and AAAA), without using the thread pool. */
export function createEgressResolver(opts: ResolverOptions = {}): Resolve {
  const resolver = new Resolver({ timeout: opts.attemptTimeoutMs ?? 2_000, tries: 2 });
  if (opts.servers) resolver.setServers(opts.servers);
  const hosts = hostsFileReader(opts.hostsFile ?? '/etc/hosts');
  return async (host) => {
    const name = host.toLowerCase();
    const listed = hosts().get(name);
    if (listed) return listed;
    const [v4, v6] = await Promise.allSettled([resolver.resolve4(name), resolver.resolve6(name)]);
    const found = [v4, v6].flatMap((r) => (r.status === 'fulfilled' ? r.value : []));
    // One family answering is enough: only the addresses returned are vetted and dialled.
    if (found.length > 0) return found;
    const failed = [v4, v6].find((r): r is PromiseRejectedResult => r.status === 'rejected');
    throw failed?.reason ?? Object.assign(new Error(`${name} has no address`), { code: 'ENODATA' });
  };
}

/**
 * /etc/hosts as name → addresses, parsed again only when its mtime changes. Read synchronously on
 * purpose: an async read would queue on the very thread pool this module keeps clear of, and a
 * stat of a small local file costs microseconds.
 */
function hostsFileReader(path: string): () => Map<string, string[]> {
  let cached: { mtimeMs: number; map: Map<string, string[]> } | undefined;
  return () => {
    let mtimeMs: number;
    try {
      mtimeMs = statSync(path).mtimeMs;
    } catch (err) {
      // No hosts file is a valid setup: every name then goes to DNS.
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return new Map();
      throw err;
    }
    if (cached?.mtimeMs !== mtimeMs)
      cached = { mtimeMs, map: parseHosts(readFileSync(path, 'utf8')) };
    return cached.map;
  };
}

function parseHosts(text: string): Map<string, string[]> {
  const map = new Map<string, string[]>();
  for (const line of text.split('\n')) {
    const [address, ...names] = line.replace(/#.*/, '').trim().split(/\s+/);
    if (!address || !parseIp(address)) continue;
    for (const name of names) {
      const key = name.toLowerCase();
      const list = map.get(key) ?? [];
      if (!list.includes(address)) list.push(address);
      map.set(key, list);
    }
  }
  return map;
}
