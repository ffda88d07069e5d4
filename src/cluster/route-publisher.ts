import type { RoutePublisher } from '../services/direct-routes.js';
import type { AppRoutes } from './app-routes.js';

/** The cluster's app routes as the direct-routes publisher: pods only (no host sockets there). */
export function kubeRoutePublisher(routes: AppRoutes): RoutePublisher {
  return {
    async publish({ appId, appName, host, target }) {
      if (!('host' in target)) throw new Error(`app ${appId}: a cluster route needs a pod address`);
      await routes.publish({ appId, appName, host, podIP: target.host, port: target.port });
    },
    withdraw: (appId) => routes.withdraw(appId),
    async published() {
      const found = new Map<string, { host: string; target: string }>();
      for (const [appId, route] of await routes.published()) {
        found.set(appId, { host: route.host, target: route.podIP });
      }
      return found;
    },
    ensureFallback: (appsDomain) => routes.ensureFallback(appsDomain),
    start: () => routes.start(),
    stop: () => void routes.stop(),
  };
}
