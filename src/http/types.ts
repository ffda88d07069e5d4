import type { IncomingMessage } from 'node:http';
import type { Identity } from '../auth/identity.js';
import type { Config } from '../config/schema.js';
import type { Store } from '../persistence/store.js';
import type { DeployServices } from '../services/compose.js';
import type { Metrics } from '../metrics.js';
import type { Readiness } from './readiness.js';

// Shared services are fastify decorators, typed once here.
declare module 'fastify' {
  interface FastifyInstance {
    config: Config;
    store: Store;
    metrics: Metrics;
    readiness: Readiness;
    deploy: DeployServices;
    /**
     * The address a request's client connected from: the socket's peer, or, with replicas, the
     * one a follower that handed the request here vouched for (undefined: unknown).
     */
    clientAddress(message: IncomingMessage): string | undefined;
  }
  interface FastifyRequest {
    /** Set by the auth plugin on every request to a protected path. */
    identity?: Identity;
  }
}
