import { pathOf, type Log } from '../logging.js';
import { STATUS_CLASSES, statusClass, type Metrics, type StatusCounts } from '../metrics.js';
import type { ServedRequest } from '../services/direct-routes.js';

/**
 * What visitors ask of apps, on either data path: `slipway_app_requests_total{app, code}` and,
 * at debug, one access line per request, the same on both: the router's own, and those the native
 * front door carried straight to apps (from its access ring; counted from its counters).
 */
export class AppTraffic {
  constructor(
    private readonly metrics: Metrics,
    private readonly log: Log,
  ) {}

  /** A request for an app's host the router answered (the app, or the router for it). */
  answered(app: string, request: { method?: string; url?: string }, status: number, ms: number) {
    this.metrics.appRequests.inc({ app, code: statusClass(status) });
    this.log('debug', 'app request', {
      app,
      method: request.method,
      path: pathOf(request.url ?? ''),
      status,
      ms: Math.round(ms * 10) / 10,
    });
  }

  /** A request the native front door carried to the app: its access line (counted apart). */
  served(app: string, request: ServedRequest): void {
    const { method, path, status, ms } = request;
    this.log('debug', 'app request', { app, method, path, status, ms });
  }

  /** Requests the native front door carried to an app since it last counted. */
  counted(app: string, counts: StatusCounts): void {
    for (const code of STATUS_CLASSES) {
      const n = counts[code] ?? 0;
      if (n > 0) this.metrics.appRequests.inc({ app, code }, n);
    }
  }

  /** A deleted app's series go with it: names come and go, the series count must not grow. */
  forget(app: string): void {
    for (const code of STATUS_CLASSES) this.metrics.appRequests.remove({ app, code });
  }
}
