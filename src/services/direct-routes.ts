import type { AppRegistry } from '../actors/registry.js';
import { AppError } from '../errors.js';
import type { PublicUrls } from './public-urls.js';
import type { Store } from '../persistence/store.js';
import type { Sandbox } from '../runtime/runtime.js';
import type { Log } from '../logging.js';
import type { StatusCounts } from '../metrics.js';

/** One request a direct route carried to an app, for its access line. */
export interface ServedRequest {
  method: string;
  /** Without its query string: a token in one never reaches a log. */
  path: string;
  status: number;
  ms: number;
}

/** Where a direct route sends an app's visitors: a pod's address, or a socket on this host. */
export type RouteTarget = { host: string; port: number } | { socket: string };

/**
 * Writes and removes a serving app's direct route (Kubernetes: Service, EndpointSlice, HTTPRoute;
 * the local native front door: a map entry of its proxy).
 */
export interface RoutePublisher {
  publish(e: { appId: string; appName: string; host: string; target: RouteTarget }): Promise<void>;
  withdraw(appId: string): Promise<void>;
  /** Every app routed now, with where to (`targetKey` of its target). */
  published(): Promise<Map<string, { host: string; target: string }>>;
  /** The wildcard route of the apps domain → the control plane, for apps without their own. */
  ensureFallback(appsDomain: string): Promise<void>;
  /** Visitors reached these apps through their routes lately (idle suspend counts them). */
  onActivity?(listener: (appIds: string[]) => void): void;
  /** Requests the routes carried to each app since the last count, by status class. */
  onRequests?(listener: (appId: string, counts: StatusCounts) => void): void;
  /** Each request the routes carried to an app, when they log them one by one (debug). */
  onServed?(listener: (appId: string, request: ServedRequest) => void): void;
  /**
   * Starts what keeps the routes up to date by itself (the sandbox pods' watch): with the
   * services, so a replica that does not lead writes no route.
   */
  start?(): Promise<void>;
  /** Stops watching for activity; the routes themselves stay as they are. */
  stop?(): void;
}

/** One string per target, to compare where a route goes with where it should. */
export const targetKey = (target: RouteTarget): string =>
  'socket' in target ? target.socket : target.host;

/** Where a sandbox can be reached without the control plane, if anywhere. */
function targetOf(sandbox: Sandbox | undefined): RouteTarget | undefined {
  if (sandbox?.address) return sandbox.address;
  return sandbox?.socketPath === undefined ? undefined : { socket: sandbox.socketPath };
}

/**
 * What the app service asks of the data path when an app's access narrows: a private app is
 * reached only through the control plane's router, which checks grants; a direct route would skip
 * that check, so it must be gone before the app counts as private.
 */
export interface AccessGate {
  /** Runs `change` (which makes the app private) once the app has no direct route any more. */
  closing<T>(appId: string, change: () => T): Promise<T>;
  /** The app's access may have widened: its direct route may come back. */
  changed(appId: string): void;
}

/** Everything is compared with what exists this often, so a missed event or a hand edit heals. */
const RESYNC_MS = 30_000;

/**
 * The data path that scales with the cluster (design.md §4): an app whose serving sandbox (Ready,
 * or beside a deploy under way) has an address of its own is routed there directly, ingress →
 * pod; an app that stops serving loses its route and falls through to the control plane's
 * router, which wakes and holds it. Follows the registry's events; one app's writes never
 * overlap; failures are logged and healed by the resync.
 */
export class DirectRoutes implements AccessGate {
  private readonly current = new Map<string, string>();
  /** Apps becoming private: no route for them, whatever the store still says. */
  private readonly closingApps = new Set<string>();
  private readonly chains = new Map<string, Promise<void>>();
  private unsubscribe: (() => void) | undefined;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly store: Pick<Store, 'getAppSummary'>,
    private readonly registry: AppRegistry,
    private readonly urls: PublicUrls,
    private readonly publisher: RoutePublisher,
    private readonly log: Log,
    /** Routes stay when this process stops (its sandboxes outlive it and serve on). */
    private readonly keepOnStop = false,
  ) {
    registry.routeWith({
      release: (appId, sandbox) => this.release(appId, sandbox),
      settle: (appId) => this.settle(appId),
    });
    publisher.onActivity?.((appIds) => appIds.forEach((appId) => registry.touch(appId)));
  }

  async start(): Promise<void> {
    await this.publisher.start?.();
    this.unsubscribe = this.registry.on((event) => void this.sync(event.app_id));
    await this.publisher
      .ensureFallback(this.urls.appsDomain)
      .catch((err: unknown) =>
        this.log('warn', 'direct routes: cannot write the fallback route', { error: String(err) }),
      );
    await this.resync();
    this.timer = setInterval(() => void this.resync(), RESYNC_MS);
    this.timer.unref();
  }

  /**
   * Stops following. Unless the sandboxes outlive this process, every route is withdrawn: the
   * runtime's stop reaps the sandboxes they point at, so visitors are better off with the control
   * plane (held, or 503 with Retry-After, then the next start).
   */
  async stop(): Promise<void> {
    this.unsubscribe?.();
    clearInterval(this.timer);
    this.publisher.stop?.();
    await Promise.all([...this.chains.values()]);
    if (this.keepOnStop) return;
    await Promise.all(
      [...this.current.keys()].map((appId) =>
        this.publisher.withdraw(appId).then(
          () => this.current.delete(appId),
          (err: unknown) =>
            this.log('warn', 'direct route not withdrawn at stop', {
              app: appId,
              error: String(err),
            }),
        ),
      ),
    );
  }

  /** Reads what exists, then makes every app match its desired route. */
  async resync(): Promise<void> {
    let existing: Map<string, { host: string; target: string }>;
    try {
      existing = await this.publisher.published();
    } catch (err) {
      this.log('warn', 'direct routes: cannot list them; retrying later', { error: String(err) });
      return;
    }
    this.current.clear();
    for (const [appId, route] of existing) this.current.set(appId, route.target);
    const apps = new Set([...existing.keys(), ...this.registry.ids()]);
    await Promise.all([...apps].map((appId) => this.sync(appId)));
  }

  async closing<T>(appId: string, change: () => T): Promise<T> {
    this.closingApps.add(appId);
    try {
      await this.sync(appId);
      if (this.current.has(appId)) {
        throw new AppError(
          503,
          'not_ready',
          'the app is still reachable through its direct route, which the cluster did not let Slipway remove; retry shortly',
          { retryAfterSeconds: 5 },
        );
      }
      return change();
    } finally {
      this.closingApps.delete(appId);
      void this.sync(appId);
    }
  }

  changed(appId: string): void {
    void this.sync(appId);
  }

  /**
   * The sandbox is about to stop: a route still sending visitors there is moved first (to the
   * app's serving sandbox, or to the control plane). Never rejects: the stop goes on regardless.
   */
  async release(appId: string, sandbox: Sandbox): Promise<void> {
    const target = targetOf(sandbox);
    if (target === undefined || this.current.get(appId) !== targetKey(target)) return;
    await this.sync(appId);
  }

  /**
   * What a deploy, rollback or resume waits for before it answers. A direct route that still sends
   * visitors to another sandbox (the version before) is moved first. An app without one is
   * reached through the fallback route, whose router serves it now: its first route is written
   * without holding the answer (on Kubernetes, three API writes).
   */
  settle(appId: string): Promise<void> {
    const change = this.sync(appId);
    return this.current.has(appId) ? change : Promise.resolve();
  }

  /** Makes the app's route match its state now; queued behind the app's previous change. */
  sync(appId: string): Promise<void> {
    const next = (this.chains.get(appId) ?? Promise.resolve()).then(() => this.apply(appId));
    this.chains.set(appId, next);
    void next.finally(() => {
      if (this.chains.get(appId) === next) this.chains.delete(appId);
    });
    return next;
  }

  private async apply(appId: string): Promise<void> {
    // A private app's visitors need the router's grant check: no direct route for it. The summary:
    // every change of the app comes here, and its env is none of a route's business.
    const open =
      !this.closingApps.has(appId) && this.store.getAppSummary(appId)?.access !== 'private';
    // The sandbox that serves, Ready or not: a deploy under way leaves the release before it
    // serving (and its route in place) until the new one takes over.
    const sandbox = open ? this.registry.serving(appId) : undefined;
    const target = targetOf(sandbox);
    const now = this.current.get(appId);
    try {
      if (target && now !== targetKey(target)) {
        const host = new URL(this.urls.appUrl(appId)).hostname;
        await this.publisher.publish({ appId, appName: appId, host, target });
        this.current.set(appId, targetKey(target));
        this.log('info', 'direct route published', { app: appId, to: targetKey(target) });
      } else if (!target && now !== undefined) {
        await this.publisher.withdraw(appId);
        this.current.delete(appId);
        this.log('info', 'direct route withdrawn', { app: appId });
      }
    } catch (err) {
      this.log('warn', 'direct route change failed; the resync retries it', {
        app: appId,
        error: err instanceof Error ? err.message : String(err),
      });
    }
  }
}
