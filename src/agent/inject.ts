import { existsSync, statSync } from 'node:fs';
import type net from 'node:net';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { appEnv } from './app-env.js';
import type { AppHandler } from './bridges.js';
import { listensHere, onAppListening } from './app-servers.js';
import { errorText } from './diag.js';
import { resolveEntrypoint, staticRoot } from './entrypoint.js';
import type { NodeApp } from './node-app.js';
import {
  APP_DIR,
  PIP_TARGET,
  type ExitReport,
  type InjectRequest,
  type InjectResponse,
  type Template,
} from './protocol.js';
import { releaseOptimizer } from './optimizer.js';
import type { PythonApp } from './python-app.js';
import { placement } from './placement.js';
import { pythonServer } from './python-server.js';
import { createStaticServer } from './static-server.js';
import { BadSourceError, pullAndUnpack, unpack } from './unpack.js';
import { IDLE_MS, waitForApp } from './wait-port.js';
import { ring } from './log-ring.js';

export type Phase =
  'idle' | 'installing' | 'installed' | 'starting' | 'running' | 'failed' | 'exited';

export interface InjectContext {
  template: Template;
  token: string;
  phase: Phase;
  node?: NodeApp;
  python?: PythonApp;
  /** The interpreter the python template runs (and installs with). */
  pythonBin?: string;
  /** The source key the general lane's install unpacked into /app. */
  installed?: string;
  /** The install ran the project's build: a static site is served from its output. */
  built?: boolean;
  /** Where the app accepts connections: $PORT, or the one other port it chose. */
  address?: { host: string; port: number };
  setAppHandler(handler: AppHandler): void;
  connectApp(host: string, port: number): AppHandler;
}

type Answer = { status: number; body: InjectResponse | { ok: false; error: string } };

/**
 * One inject: pull and unpack the source, start the app, and answer once it accepts connections.
 * The answer is the whole protocol: 200 started, 422 exited first (with its exit report), 400 the
 * source or entrypoint cannot work, 504 it never answered, 409 this sandbox was already used.
 * After the general lane's install the source is in /app already: the same key skips the pull.
 */
export async function runInject(
  ctx: InjectContext,
  req: InjectRequest,
  socket: net.Socket,
): Promise<Answer> {
  const installed = ctx.phase === 'installed' && ctx.installed === req.sourceKey;
  if (ctx.phase !== 'idle' && !installed) {
    const what = ctx.phase === 'installed' ? ` with ${ctx.installed ?? 'another source'}` : '';
    return { status: 409, body: { ok: false, error: `sandbox is ${ctx.phase}${what}` } };
  }
  ctx.phase = 'starting';
  const t0 = performance.now();
  const deadline = Date.now() + (req.startTimeoutMs > 0 ? req.startTimeoutMs : 30_000);
  const fail = (status: number, error: string): Answer => {
    ctx.phase = 'failed';
    return { status, body: { ok: false, error } };
  };
  try {
    if (!installed) await unpackSource(req, ctx.token);
  } catch (err) {
    return fail(
      err instanceof BadSourceError ? 400 : 502,
      `cannot fetch the source: ${errorText(err)}`,
    );
  }
  const tPull = performance.now();
  // From here on the code that runs is the app's, or serves it (static files, the python bridge).
  releaseOptimizer();
  const ms = () => ({
    pull: round(tPull - t0),
    start: round(performance.now() - tPull),
    total: round(performance.now() - t0),
  });

  if (ctx.template === 'static') {
    try {
      const { root, index } = staticRoot(req.entrypoint, installed && ctx.built === true);
      const server = createStaticServer(root, index);
      ctx.setAppHandler((conn) => server.emit('connection', conn));
    } catch (err) {
      return fail(err instanceof BadSourceError ? 400 : 500, errorText(err));
    }
    ctx.phase = 'running';
    return { status: 200, body: { ok: true, ms: ms() } };
  }

  let entry: string;
  try {
    entry = resolveEntrypoint(ctx.template, req.entrypoint);
  } catch (err) {
    return fail(err instanceof BadSourceError ? 400 : 500, errorText(err));
  }
  const app = ctx.template === 'node' ? ctx.node : ctx.python;
  if (!app) return fail(500, `the ${ctx.template} runtime is not warm in this sandbox`);
  const gone = new Promise<ExitReport>((resolve) => app.onExit(resolve));
  const env = appEnv(Array.isArray(req.env) ? req.env : []);
  if (ctx.node) {
    // This call must not keep a node app alive that has nothing else to do.
    socket.unref();
    await ctx.node.start(entry, env);
  } else if (ctx.python) {
    const paths = pythonPaths(ctx.python.version);
    if (paths.length > 0)
      env.PYTHONPATH = [...paths, env.PYTHONPATH ?? ''].filter(Boolean).join(':');
    const server = pythonServer(entry, paths);
    if (server) process.stderr.write(`[slipway] ${server.note}\n`);
    ctx.python.start(entry, env, paths, server);
  }
  const APP_PORT = placement.appPort;
  const outcome = await waitForApp(APP_PORT, deadline, gone, {
    ignore: [placement.proxyPort],
    output: () => ring.written,
    ...(ctx.node ? { listensHere, onListening: onAppListening } : {}),
  });
  if (outcome.kind === 'ready') {
    if (outcome.port !== APP_PORT) {
      // The user's log must say why the app answers although it ignored $PORT.
      process.stderr.write(
        `[slipway] the app listens on port ${outcome.port}, not on $PORT (${APP_PORT}): routing to ${outcome.port}\n`,
      );
    }
    ctx.address = { host: outcome.host, port: outcome.port };
    ctx.setAppHandler(ctx.connectApp(outcome.host, outcome.port));
    ctx.phase = 'running';
    return { status: 200, body: { ok: true, ms: ms() } };
  }
  if (outcome.kind === 'gone') {
    ctx.phase = 'exited';
    return { status: 422, body: { ok: false, exit: await gone } };
  }
  if (outcome.kind === 'idle') {
    return fail(
      504,
      `the app is not listening on $PORT (${APP_PORT}), nor on any other TCP port, and has ` +
        `printed nothing and used no CPU for ${IDLE_MS / 1000} s: listen on the port in $PORT`,
    );
  }
  const also =
    outcome.ports.length > 0
      ? `; it listens on ${outcome.ports.join(', ')}, and Slipway routes to another port only when it is the only one`
      : '';
  return fail(
    504,
    `the app did not accept connections on $PORT (${APP_PORT}) within ${req.startTimeoutMs} ms${also}`,
  );
}

/**
 * What the app imports from besides the stdlib (docs/classifier.md): the general lane's install
 * target, then vendored packages (`pip install --target vendor`, PEP 582 `__pypackages__`).
 */
function pythonPaths(version: string | undefined): string[] {
  const candidates = [
    PIP_TARGET,
    join(APP_DIR, 'vendor'),
    ...(version ? [join(APP_DIR, '__pypackages__', version, 'lib')] : []),
  ];
  return candidates.filter((dir) => existsSync(dir) && statSync(dir).isDirectory());
}

function round(ms: number): number {
  return Math.round(ms * 10) / 10;
}

/** Into /app: the source the request carries, else the one its key (or URL) pulls. */
function unpackSource(req: InjectRequest, token: string): Promise<void> {
  if (typeof req.source === 'string') {
    return unpack(Readable.from([Buffer.from(req.source, 'base64')]));
  }
  return pullAndUnpack(req.sourceKey, token, APP_DIR, false, req.sourceUrl);
}
