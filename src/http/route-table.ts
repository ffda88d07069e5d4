import type { FastifyInstance, HTTPMethods, RouteOptions } from 'fastify';

export interface RouteEntry {
  method: HTTPMethods;
  /** The fastify URL pattern as registered, e.g. `/v1/apps/:id`. */
  url: string;
  /** The route's schema option as given (the contract test checks it is the spec's). */
  schema?: unknown;
}

declare module 'fastify' {
  interface FastifyInstance {
    /** Every route registered on this server (the contract test compares it with the spec). */
    routeTable: RouteTable;
  }
}

/** Records routes as fastify registers them. */
export class RouteTable {
  private readonly recorded: RouteEntry[] = [];
  /** Prefixed `/` routes whose slash twin fastify may also have registered. */
  private readonly twinCandidates: RouteEntry[] = [];

  constructor(private readonly hasRoute: (entry: RouteEntry) => boolean) {}

  record(route: RouteOptions & { routePath: string; prefix: string }): void {
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    for (const method of methods) {
      const entry = { method, url: route.url, schema: route.schema };
      this.recorded.push(entry);
      // fastify runs onRoute only for the bare `/prefix` of a plugin's `/` route, not for the
      // `/prefix/` twin it registers next (prefixTrailingSlash 'both'), so look that one up later.
      if (route.routePath === '' && route.prefix) this.twinCandidates.push(entry);
    }
  }

  /** Registered routes in registration order, HEAD routes included, each once. */
  list(): RouteEntry[] {
    const seen = new Set(this.recorded.map(key));
    // The twin's auto-HEAD does run onRoute, so it may be recorded already.
    const twins = this.twinCandidates
      .map((entry) => ({ method: entry.method, url: `${entry.url}/` }))
      .filter((twin) => !seen.has(key(twin)) && this.hasRoute(twin));
    return [...this.recorded, ...twins];
  }
}

const key = (entry: RouteEntry): string => `${entry.method} ${entry.url}`;

/**
 * Installs the recorder. Call it first thing in buildServer: onRoute sees only routes registered
 * after the hook, and child plugins inherit the hook only if it exists when they register.
 */
export function installRouteTable(app: FastifyInstance): void {
  const table = new RouteTable((entry) => app.hasRoute(entry));
  app.decorate('routeTable', table);
  app.addHook('onRoute', (route) => table.record(route));
}
