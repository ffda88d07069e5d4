import type net from 'node:net';
import {
  compileExceptions,
  hostAllowed,
  privateAllowed,
  privateRange,
  targetAllowed,
  type PrivateExceptions,
} from './egress-policy.js';
import type { Log } from '../../logging.js';

export interface EgressRuleSet {
  /** `egress.allowed_hosts` entries: names, wildcards, addresses, each with an optional port. */
  allowedHosts: readonly string[];
  /** Refused addresses that may still be reached when allowed: names, addresses or CIDRs. */
  allowPrivate: readonly string[];
  /** Package indexes an install may read (and nothing more), beyond allowedHosts. */
  indexes?: readonly PackageIndex[];
}

/**
 * A package index as the gate sees it: `host:port`, and whether it speaks TLS. An https index is
 * reached through a CONNECT tunnel (whose requests the gate cannot read); a plain http one only by
 * GET and HEAD requests the gate reads itself, one per connection and with no body.
 */
export interface PackageIndex {
  target: string;
  tls: boolean;
}

/** How a target may be used: as the app's rules allow, or as a package index only. */
export type Access = 'open' | 'index-tunnel' | 'index-read';

/**
 * The rules one egress gate enforces. They change during a sandbox's life (the general lane's
 * install may reach the package registry, the app after it may not), so they are an object with
 * one explicit way to replace them, and the gate hears of every change to re-vet open tunnels.
 */
export class EgressRules {
  private hosts: string[] = [];
  private indexes: PackageIndex[] = [];
  private exceptions: PrivateExceptions = compileExceptions([]);
  private readonly listeners: (() => void)[] = [];

  constructor(
    initial: EgressRuleSet,
    private readonly log: Log = () => undefined,
  ) {
    this.set(initial);
  }

  /** Replaces both lists (copied: a caller's later edits to its arrays change nothing). */
  set(rules: EgressRuleSet): void {
    this.hosts = [...rules.allowedHosts];
    this.indexes = [...(rules.indexes ?? [])];
    this.exceptions = compileExceptions(rules.allowPrivate);
    if (this.exceptions.invalid.length > 0) {
      this.log('info', 'egress: ignoring allowPrivate entries that are no name, address or CIDR', {
        entries: this.exceptions.invalid,
      });
    }
    for (const listener of this.listeners) listener();
  }

  /** Called after every `set`. */
  onChange(listener: () => void): void {
    this.listeners.push(listener);
  }

  get allowedHosts(): readonly string[] {
    return this.hosts;
  }

  /** How `host:port` may be used, or undefined when nothing allows it (see `refusal`). */
  access(host: string, port: number): Access | undefined {
    if (targetAllowed(host, port, this.hosts)) return 'open';
    const index = this.indexes.find((i) => targetAllowed(host, port, [i.target]));
    if (index === undefined) return undefined;
    return index.tls ? 'index-tunnel' : 'index-read';
  }

  /** Why `host:port` is refused, or undefined when the list or a package index allows it. */
  refusal(host: string, port: number): string | undefined {
    if (this.access(host, port) !== undefined) return undefined;
    if (!hostAllowed(host, this.hosts)) {
      const why = this.hosts.length === 0 ? ' (the list is empty: this app has no egress)' : '';
      return `not in egress.allowed_hosts${why}`;
    }
    return (
      `port ${port} is not allowed (an egress.allowed_hosts entry without a port allows 80 ` +
      `and 443; name other ports as host:${port})`
    );
  }

  allowsPrivate(target: { host: string; port: number }, address: string): boolean {
    return privateAllowed(target, address, this.exceptions);
  }

  /** Whether an open tunnel (its target, and the address it reached) would be admitted now. */
  permits(tunnel: Pick<Tunnel, 'host' | 'port' | 'address'>): boolean {
    const { address } = tunnel;
    if (this.refusal(tunnel.host, tunnel.port) !== undefined) return false;
    return address === undefined || !privateRange(address) || this.allowsPrivate(tunnel, address);
  }
}

/** An admitted connection: the app's side and the upstream it was spliced to. */
export interface Tunnel {
  host: string;
  port: number;
  address: string | undefined;
  client: net.Socket;
  upstream: net.Socket;
}

/** Destroys the tunnels the rules no longer permit. */
export function cutDisallowed(tunnels: Set<Tunnel>, rules: EgressRules, log: Log): void {
  for (const tunnel of tunnels) {
    if (rules.permits(tunnel)) continue;
    log('info', 'egress tunnel cut: the rules no longer allow it', { host: tunnel.host });
    tunnel.client.destroy();
    tunnel.upstream.destroy();
    tunnels.delete(tunnel);
  }
}
