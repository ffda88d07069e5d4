import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { forbidden } from '../errors.js';

/**
 * DNS rebinding defence for a server without auth (it listens on loopback): a page on a foreign
 * name that the attacker re-points at 127.0.0.1 reaches us with that name in `Host` (and its own
 * `Origin`), and without auth it could deploy anything. So every control-plane request must name a
 * loopback host, or one the operator configured (`server.baseURL`, an explicit listen address).
 * App hosts (`<name>.<apps domain>`) never get here: the listener hands them to the app router.
 */
export function hostGuardPlugin(opts: { extraHosts: string[] }) {
  const extra = new Set(opts.extraHosts.map((h) => h.toLowerCase()));
  const allowed = (hostname: string | undefined): boolean =>
    hostname !== undefined && (isLoopbackName(hostname) || extra.has(hostname));

  async function plugin(app: FastifyInstance): Promise<void> {
    // A callback hook (a throw in it is the hook's error): no promise per request.
    app.addHook('onRequest', (request, _reply, done) => {
      if (!allowed(hostnameOfHost(request.headers.host))) {
        throw forbidden('this server has auth disabled and answers only loopback host names');
      }
      const origin = request.headers.origin;
      if (origin !== undefined && !allowed(hostnameOfOrigin(origin))) {
        throw forbidden('this server has auth disabled and answers only loopback origins');
      }
      done();
    });
  }
  // Not encapsulated: the hook guards every route.
  return fp(plugin, { name: 'slipway-host-guard' });
}

/** `localhost`, `127.0.0.1`, `[::1]` and `*.localhost` (RFC 6761: always loopback). */
export function isLoopbackName(hostname: string): boolean {
  const name = hostname.toLowerCase();
  return (
    name === 'localhost' || name === '127.0.0.1' || name === '[::1]' || name.endsWith('.localhost')
  );
}

/** Host names and bracketed IPv6 literals, with an optional port; nothing else is a Host. */
const HOST = /^(?<name>[a-z0-9](?:[a-z0-9.-]*[a-z0-9])?|\[[0-9a-f:.]+\])(?::\d{1,5})?$/i;

function hostnameOfHost(host: string | undefined): string | undefined {
  return host === undefined ? undefined : HOST.exec(host)?.groups?.name?.toLowerCase();
}

function hostnameOfOrigin(origin: string): string | undefined {
  const match = /^https?:\/\/([^/?#]+)$/i.exec(origin);
  return match ? hostnameOfHost(match[1]) : undefined;
}
