import type { FastifyInstance, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { forbidden } from '../errors.js';
import { isOwnOrigin } from '../auth/own-origin.js';

export interface OriginGuardOptions {
  authEnabled: boolean;
  /** Whether a `host[:port]` names an app (`<name>.<apps domain>`). */
  isAppHost(host: string): boolean;
}

/**
 * Cross-site request forgery defence. An app's page is a stranger's code running in the
 * operator's browser, on a host next to the control plane's: every app origin is foreign to the
 * control plane, in every auth mode, and so is `Origin: null` on a request that changes something
 * (what a page gets when it hides its origin). Without auth the browser's presence is the whole
 * credential, so such a request must also come from the control plane's own pages (its Origin)
 * or, with no Origin at all, be one a web page cannot send without asking first (not "simple" in
 * the Fetch sense), and this server grants no page that ask. /mcp keeps its own stricter rule
 * (its own origin or one the operator listed, and JSON only: see mcp/origin.ts).
 */
export function originGuardPlugin(opts: OriginGuardOptions) {
  async function plugin(app: FastifyInstance): Promise<void> {
    // A callback hook (a throw in it is the hook's error): no promise for the requests it lets by.
    app.addHook('onRequest', (request, _reply, done) => {
      const { origin } = request.headers;
      if (origin !== undefined && isAppOrigin(origin, opts)) {
        throw forbidden("the control plane does not take requests from an app's pages");
      }
      if (!changesState(request)) return done();
      if (origin === 'null') {
        throw forbidden('a request that changes something must not hide its Origin (null)');
      }
      if (opts.authEnabled || isMcp(request)) return done();
      if (origin !== undefined ? isOwnOrigin(origin, request) : isNonSimple(request)) return done();
      throw forbidden(
        origin !== undefined
          ? 'this server has auth disabled: a request that changes something from a web page must come from the dashboard'
          : 'this server has auth disabled: a request that changes something needs a header a web form cannot send, ' +
              'e.g. Content-Type: application/json or X-Requested-With',
      );
    });
  }
  // Not encapsulated: the hook guards every route.
  return fp(plugin, { name: 'slipway-origin-guard' });
}

function isAppOrigin(origin: string, opts: OriginGuardOptions): boolean {
  if (!URL.canParse(origin)) return false;
  return opts.isAppHost(new URL(origin).host);
}

const READS = new Set(['GET', 'HEAD', 'OPTIONS']);

const changesState = (request: FastifyRequest): boolean => !READS.has(request.method);

const isMcp = (request: FastifyRequest): boolean =>
  request.routeOptions.url === '/mcp' || request.routeOptions.url === '/mcp/';

/** What a form or a `no-cors` fetch may send as Content-Type (the Fetch standard's safelist). */
const FORM_TYPES = new Set([
  'application/x-www-form-urlencoded',
  'multipart/form-data',
  'text/plain',
]);

/**
 * A request no page can send cross-origin without a CORS preflight: another method, a Content-Type
 * outside the form types, or a header outside the safelist. Only headers a page would have to set
 * count (a proxy may add others), so this errs towards "simple", the side that refuses.
 */
function isNonSimple(request: FastifyRequest): boolean {
  if (request.method !== 'POST') return true;
  const type = request.headers['content-type'];
  const essence = type?.split(';')[0]?.trim().toLowerCase();
  if (essence !== undefined && !FORM_TYPES.has(essence)) return true;
  const { headers } = request;
  return headers.authorization !== undefined || headers['x-requested-with'] !== undefined;
}
