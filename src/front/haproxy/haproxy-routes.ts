import { renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { readlink } from 'node:fs/promises';
import type { RoutePublisher, RouteTarget, ServedRequest } from '../../services/direct-routes.js';
import { followAccessRing } from './access-ring.js';
import { haproxyChange, haproxyCommand } from './haproxy-cli.js';
import { slotBackend, type HaproxyPaths } from './haproxy-config.js';
import type { Log } from '../../logging.js';
import { STATUS_CLASSES, type StatusCounts } from '../../metrics.js';

/** A slot backend's counters: connections now, sessions ever, answers by status class. */
interface SlotCounters {
  current: number;
  total: number;
  classes: StatusCounts;
}

interface Route {
  host: string;
  slot: number;
  /** The sandbox socket link the slot's symlink names. */
  target: string;
}

/** How often the routed slots' counters are read, for idle suspend. */
const ACTIVITY_POLL_MS = 1_000;

/**
 * Ready public apps' routes in the native front door: each app has a slot (a backend whose one
 * server is the symlink `slots/<n>.sock`), and the route map sends its host there. A switch
 * (blue/green, rollback) points a fresh slot at the new sandbox, then changes the map entry in
 * one runtime API command: no request sees a half-switched or missing route. The map file is
 * written after every change, so a reload of the proxy keeps the routes.
 */
export class HaproxyRoutes implements RoutePublisher {
  private readonly routes = new Map<string, Route>();
  /** Free slots, least recently used first: a freed slot is the last to be handed out again. */
  private free: number[] = [];
  private readonly listeners: ((appIds: string[]) => void)[] = [];
  private readonly counters: ((appId: string, counts: StatusCounts) => void)[] = [];
  /** Each routed slot's counters when last read (or when its app got it): the next read's base. */
  private readonly served = new Map<number, SlotCounters>();
  private poller: NodeJS.Timeout | undefined;
  private chain: Promise<unknown> = Promise.resolve();

  /** The access ring's reading, while someone listens (only when the proxy writes it). */
  private ring: { stop(): void } | undefined;

  constructor(
    private readonly paths: HaproxyPaths,
    private readonly slots: number,
    private readonly log: Log,
    /** The proxy writes each direct request's line to its access ring (the log level is debug). */
    private readonly accessLog = false,
  ) {
    this.free = Array.from({ length: slots }, (_, n) => n);
  }

  publish(e: { appId: string; host: string; target: RouteTarget }): Promise<void> {
    if (!('socket' in e.target)) {
      return Promise.reject(new Error(`app ${e.appId}: the front door routes to sockets only`));
    }
    const target = e.target.socket;
    return this.serial(() => this.point(e.appId, e.host, target));
  }

  withdraw(appId: string): Promise<void> {
    return this.serial(async () => {
      const route = this.routes.get(appId);
      if (!route) return;
      await haproxyChange(this.paths.admin, `del map ${this.paths.map} ${route.host}`);
      this.routes.delete(appId);
      this.saveMap();
      this.release(route.slot);
    });
  }

  /** The routes the running proxy holds (an earlier control plane's included), slots rebuilt. */
  published(): Promise<Map<string, { host: string; target: string }>> {
    return this.serial(async () => {
      const listing = await haproxyCommand(this.paths.admin, `show map ${this.paths.map}`);
      this.routes.clear();
      for (const line of listing.split('\n')) {
        const [, host, backend] = line.trim().split(/\s+/);
        const slot = Number(/^slot_(\d+)$/.exec(backend ?? '')?.[1] ?? NaN);
        if (!host || !Number.isInteger(slot) || slot >= this.slots) continue;
        const target = await readlink(this.paths.slot(slot)).catch(() => '');
        this.routes.set(appOfHost(host), { host, slot, target });
      }
      const taken = new Set([...this.routes.values()].map((r) => r.slot));
      this.free = this.free.filter((n) => !taken.has(n));
      for (let n = 0; n < this.slots; n += 1) {
        if (!taken.has(n) && !this.free.includes(n)) this.free.push(n);
      }
      const found = new Map<string, { host: string; target: string }>();
      for (const [appId, r] of this.routes) found.set(appId, { host: r.host, target: r.target });
      return found;
    });
  }

  /** Hosts without a route go to the control plane already: nothing to write. */
  async ensureFallback(): Promise<void> {}

  onActivity(listener: (appIds: string[]) => void): void {
    this.listeners.push(listener);
    this.startPolling();
  }

  onRequests(listener: (appId: string, counts: StatusCounts) => void): void {
    this.counters.push(listener);
    this.startPolling();
  }

  onServed(listener: (appId: string, request: ServedRequest) => void): void {
    if (!this.accessLog || this.ring) return;
    this.ring = followAccessRing(
      this.paths.admin,
      (request) => listener(appOfHost(request.host), request),
      (err) => this.log('warn', 'the front door access log cannot be read; retrying', { err }),
    );
  }

  private startPolling(): void {
    this.poller ??= setInterval(() => void this.poll(), ACTIVITY_POLL_MS);
    this.poller.unref();
  }

  /** Stops reading counters; the routes stay in the proxy. */
  stop(): void {
    clearInterval(this.poller);
    this.poller = undefined;
    this.ring?.stop();
    this.ring = undefined;
  }

  private async point(appId: string, host: string, target: string): Promise<void> {
    const old = this.routes.get(appId);
    if (old?.target === target && old.host === host) return;
    const slot = this.free.shift();
    if (slot === undefined) {
      throw new Error(`every one of the ${this.slots} front door slots is taken`);
    }
    let base: Map<number, SlotCounters>;
    try {
      this.pointSlot(slot, target);
      const backend = slotBackend(slot);
      const verb = old?.host === host ? 'set' : 'add';
      // One runtime API call (the route stage of a deploy paid one connection per command), its
      // commands run in order: the slot's counters while no route names it yet (its new app's
      // zero); what still holds a connection through it was another sandbox's visitor; its
      // server was marked down when its last sandbox went (haproxy-config.ts); then the route.
      const answer = await haproxyCommand(
        this.paths.admin,
        [
          `show stat ${backend} 2 -1`,
          `shutdown sessions server ${backend}/app`,
          `set server ${backend}/app health up`,
          `${verb} map ${this.paths.map} ${host} ${backend}`,
        ].join('; '),
      );
      // Each command's output ends with a blank line; the changes print nothing when they work.
      const end = answer.indexOf('\n\n');
      const refused = end === -1 ? answer.trim() : answer.slice(end + 2).trim();
      if (end === -1 || refused !== '') {
        throw new Error(`haproxy refused the route of ${host}: ${refused.split('\n')[0]}`);
      }
      base = countersOf(answer.slice(0, end + 1));
      if (!base.has(slot)) {
        // Unread, the app's first look counts from then on: its requests until that look go
        // uncounted, not misfiled.
        this.log('warn', 'front door counters not read', { answer: answer.slice(0, end) });
      }
    } catch (err) {
      this.free.unshift(slot);
      throw err;
    }
    this.routes.set(appId, { host, slot, target });
    const zero = base.get(slot);
    if (zero) this.served.set(slot, zero);
    else this.served.delete(slot);
    if (old && old.host !== host) {
      await haproxyChange(this.paths.admin, `del map ${this.paths.map} ${old.host}`);
    }
    this.saveMap();
    if (old) this.release(old.slot);
  }

  /**
   * A slot no route names any more points at the control plane's hold socket, then goes to the
   * end of the free list: requests in flight there finish, and a GET the proxy tries again there
   * (the sandbox went) is held by the router until the app serves again, not failed.
   */
  private release(slot: number): void {
    this.pointSlot(slot, this.paths.hold);
    this.served.delete(slot);
    this.free.push(slot);
  }

  /**
   * Swaps the slot's symlink in one rename: a connection made meanwhile gets one or the other.
   * Synchronous, like saveMap: a few µs each on this thread, where libuv's four file threads are
   * often busy refilling the pool during a deploy, and a route waited up to 9 ms for one.
   */
  private pointSlot(slot: number, target: string): void {
    const temp = `${this.paths.slot(slot)}.new`;
    rmSync(temp, { force: true });
    symlinkSync(target, temp);
    renameSync(temp, this.paths.slot(slot));
  }

  private saveMap(): void {
    const text = [...this.routes.values()].map((r) => `${r.host} ${slotBackend(r.slot)}\n`);
    const temp = `${this.paths.map}.new`;
    writeFileSync(temp, text.join(''), { mode: 0o600 });
    renameSync(temp, this.paths.map);
  }

  /**
   * Apps whose slot served a request since the last look, or holds a connection now (idle
   * suspend), and how many requests each slot answered since, by status class (metrics).
   */
  private async poll(): Promise<void> {
    const bySlot = new Map([...this.routes].map(([appId, r]) => [r.slot, appId]));
    if (bySlot.size === 0) return;
    let now: Map<number, SlotCounters>;
    try {
      now = await this.readSlots([...bySlot.keys()]);
    } catch (err) {
      this.log('warn', 'front door counters not read', { error: String(err) });
      return;
    }
    const active: string[] = [];
    for (const [slot, counters] of now) {
      const appId = bySlot.get(slot);
      // Handed to another app (or freed) while its counters were read: that app's base stands.
      if (appId === undefined || this.routes.get(appId)?.slot !== slot) continue;
      const before = this.served.get(slot);
      this.served.set(slot, counters);
      if (counters.current > 0 || (before !== undefined && counters.total > before.total)) {
        active.push(appId);
      }
      if (!before) continue;
      const counts: StatusCounts = {};
      for (const code of STATUS_CLASSES) {
        const n = (counters.classes[code] ?? 0) - (before.classes[code] ?? 0);
        if (n > 0) counts[code] = n;
      }
      if (Object.keys(counts).length > 0)
        for (const listener of this.counters) listener(appId, counts);
    }
    if (active.length > 0) for (const listener of this.listeners) listener(active);
  }

  /** The backend counters of these slots, from one runtime API call. */
  private async readSlots(slots: number[]): Promise<Map<number, SlotCounters>> {
    const commands = slots.map((n) => `show stat ${slotBackend(n)} 2 -1`);
    return countersOf(await haproxyCommand(this.paths.admin, commands.join('; ')));
  }

  /** One change at a time: a slot is never handed out twice, the map file never written by two. */
  private serial<T>(work: () => Promise<T>): Promise<T> {
    const next = this.chain.then(work, work);
    this.chain = next.catch(() => undefined);
    return next;
  }
}

/** The slots' backend counters in `show stat` answers (CSV, each after its `# ` header line). */
function countersOf(answer: string): Map<number, SlotCounters> {
  const found = new Map<number, SlotCounters>();
  let columns: string[] = [];
  for (const line of answer.split('\n')) {
    if (line.startsWith('# ')) {
      columns = line.slice(2).split(',');
      continue;
    }
    const fields = line.split(',');
    const slot = Number(/^slot_(\d+)$/.exec(fields[0] ?? '')?.[1] ?? NaN);
    if (!Number.isInteger(slot) || fields[1] !== 'BACKEND') continue;
    const field = (name: string): number => Number(fields[columns.indexOf(name)] ?? 0) || 0;
    const classes: StatusCounts = {};
    for (const code of STATUS_CLASSES) classes[code] = field(`hrsp_${code}`);
    found.set(slot, { current: field('scur'), total: field('stot'), classes });
  }
  return found;
}

/** Apps' hosts are `<name>.<apps domain>` and an app's id is its name. */
const appOfHost = (host: string): string => host.slice(0, host.indexOf('.'));
