import type { FastifyInstance } from 'fastify';
import { isIP } from 'node:net';
import { announceBootstrap, ensureBootstrapAdmin, type BootstrapResult } from './auth/bootstrap.js';
import { ConfigError } from './config/load.js';
import type { Config } from './config/schema.js';
import { buildServer } from './http/server.js';
import { resolveTls } from './http/tls.js';
import { openStore } from './persistence/open-store.js';

export interface Running {
  app: FastifyInstance;
  /** The control plane's base URL (`server.baseURL`, or derived from the listen address). */
  baseURL: string;
  close(): Promise<void>;
}

/** Opens the store, builds the server and listens: the whole of `npm start`, and of e2e tests. */
export async function startSlipway(
  config: Config,
  options: { logger?: boolean | { level: string } } = {},
): Promise<Running> {
  const { host, port } = splitListen(config.server.listen);
  assertSafeBind(config, host);
  const tls = await resolveTls(config);
  const store = openStore({
    backend: config.store.backend,
    path: config.store.path,
    dataDir: config.server.dataDir,
  });
  let app: FastifyInstance | undefined;
  let bootstrap: BootstrapResult;
  try {
    app = await buildServer({ config, store, tls, logger: options.logger });
    bootstrap = ensureBootstrapAdmin(config, store);
    let listening = false;
    app.readiness.register('http', () => ({ ok: listening }));
    await app.listen({ host, port });
    listening = true;
  } catch (err) {
    await app?.close();
    store.close();
    throw err;
  }
  const address = app.server.address();
  const boundPort = typeof address === 'object' && address ? address.port : port;
  const baseURL = (
    config.server.baseURL ?? `${tls ? 'https' : 'http'}://${urlHost(host)}:${boundPort}`
  ).replace(/\/+$/, '');
  try {
    await app.deploy.start(baseURL);
  } catch (err) {
    await app.close();
    store.close();
    throw err;
  }
  announceBootstrap(bootstrap, baseURL);
  const server = app;
  return {
    app: server,
    baseURL,
    async close() {
      await server.close();
      store.close();
    },
  };
}

function splitListen(listen: string): { host: string; port: number } {
  const at = listen.lastIndexOf(':');
  const host = listen.slice(0, at).replace(/^\[(.*)\]$/, '$1');
  const port = Number(listen.slice(at + 1));
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    throw new ConfigError(
      `config: server.listen: port must be 0-65535, got ${listen.slice(at + 1)}`,
    );
  }
  return { host, port };
}

const isLoopback = (host: string): boolean =>
  host === 'localhost' || host === '::1' || (isIP(host) === 4 && host.startsWith('127.'));

function assertSafeBind(config: Config, host: string): void {
  if (config.auth.enabled || config.auth.devInsecure || isLoopback(host)) return;
  throw new ConfigError(
    `config: auth.enabled is false but server.listen binds ${host}, which is not loopback; ` +
      'enable auth or set auth.devInsecure: true',
  );
}

function urlHost(host: string): string {
  if (host === '0.0.0.0' || host === '::' || host === '') return 'localhost';
  return isIP(host) === 6 ? `[${host}]` : host;
}
