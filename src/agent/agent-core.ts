import { constants } from 'node:os';
import { listensHere } from './app-servers.js';
import type { AppHandler } from './bridges.js';
import type { ControlHandlers } from './control.js';
import { lastDiagError } from './diag.js';
import { runInject, type InjectContext } from './inject.js';
import { runInstall } from './install.js';
import { ring } from './log-ring.js';
import { NodeApp } from './node-app.js';
import { placement } from './placement.js';
import type { ExitReport, Template } from './protocol.js';
import { PythonApp } from './python-app.js';
import { accepts } from './wait-port.js';

export interface AgentSetup {
  template: Template;
  token: string;
  /** Interpreter to pre-start for the python template. */
  python?: string;
  setAppHandler(handler: AppHandler): void;
  /** How connections reach the app once it listens on `host:port`. */
  connectApp(host: string, port: number): AppHandler;
  /** The agent's own servers: unref'd once a node app is loaded, so its exit is the loop's. */
  servers(): { unref(): unknown }[];
  /** The app is gone for good: end the agent with this status (after any last words). */
  exit(code: number, report: ExitReport): void;
}

/**
 * What both agents share, in a bwrap sandbox (main.ts) and in a Kubernetes pod (pod-main.ts):
 * the template's warm runtime, the inject context and the control API's handlers.
 */
export async function createAgentCore(
  setup: AgentSetup,
): Promise<{ ctx: InjectContext; handlers: ControlHandlers }> {
  const ctx: InjectContext = {
    template: setup.template,
    token: setup.token,
    phase: 'idle',
    setAppHandler: setup.setAppHandler,
    connectApp: setup.connectApp,
  };
  const end = (exit: ExitReport) => {
    ctx.phase = 'exited';
    // Mirrors the app's status, as bwrap reports a signal: 128 + n.
    const signo = exit.signal
      ? (constants.signals as Record<string, number>)[exit.signal]
      : undefined;
    setup.exit(exit.code ?? (signo !== undefined ? 128 + signo : 1), exit);
  };
  if (setup.template === 'python') {
    ctx.pythonBin = setup.python ?? '/usr/bin/python3';
    ctx.python = await PythonApp.boot(ctx.pythonBin);
    ctx.python.onExit((exit) => {
      // While an inject is pending, its answer carries the exit; afterInject ends us.
      if (ctx.phase !== 'starting') end(exit);
    });
  } else if (setup.template === 'node') {
    await preloadNode();
    ctx.node = new NodeApp(() => setup.servers().forEach((s) => s.unref()));
    ctx.node.onExit((exit) => {
      if (ctx.phase !== 'starting') end(exit);
    });
  }
  const handlers: ControlHandlers = {
    status: () => ({
      template: ctx.template,
      phase: ctx.phase,
      pid: process.pid,
      uptimeMs: Math.round(process.uptime() * 1000),
      rssBytes: process.memoryUsage.rss(),
      ...(lastDiagError ? { diagError: lastDiagError } : {}),
    }),
    health: async () => {
      if (ctx.phase !== 'running') return false;
      if (ctx.template === 'static') return true;
      const { host, port } = ctx.address ?? { host: '127.0.0.1', port: placement.appPort };
      // The app's server is an object in this process: still listening is all a probe
      // connection would show, without waking the app to accept and drop it.
      if (ctx.node && listensHere(port)) return true;
      return accepts(host, port, 1000);
    },
    logs: (lines) => ring.last(lines),
    inject: (request, socket) => runInject(ctx, request, socket),
    install: (request) => runInstall(ctx, request),
    afterInject: (status) => {
      const exit = ctx.node?.exit ?? ctx.python?.exit;
      if (status === 422 && exit) end(exit);
    },
    stop: () => {
      ctx.python?.kill('SIGTERM');
      process.kill(process.pid, 'SIGTERM');
    },
  };
  return { ctx, handlers };
}

/** Loads now what a typical app's first lines load, so the deploy does not pay for it. */
async function preloadNode(): Promise<void> {
  await Promise.all(
    [
      'node:http',
      'node:net',
      'node:events',
      'node:stream',
      'node:url',
      'node:util',
      'node:crypto',
      'node:os',
    ].map((name) => import(name)),
  );
}
