import { closeSync, readSync } from 'node:fs';
import { constants } from 'node:os';
import { listen, listenAppSocket, listenEgressForwarder } from './bridges.js';
import { createControlServer } from './control.js';
import { diag, errorText, lastDiagError } from './diag.js';
import { runInject, type InjectContext } from './inject.js';
import { runInstall } from './install.js';
import { ring, tapProcessOutput } from './log-ring.js';
import { NodeApp } from './node-app.js';
import {
  AGENT_SOCK,
  APP_PORT,
  ARGS_FD,
  SOCKET_DIR,
  type BootMessage,
  type ExitReport,
} from './protocol.js';
import { PythonApp } from './python-app.js';
import { accepts } from './wait-port.js';
import { warmUp } from './warmup.js';

/**
 * The in-sandbox agent (design.md §4). Boots, listens on agent.sock and waits: that is the warm
 * sandbox. Everything it says about itself goes to the diagnostics fd; fds 1/2 belong to the app.
 */
async function main(): Promise<void> {
  const started = performance.now();
  const boot = readBoot();
  // bwrap read its argv from this fd and left it open: nothing in here needs it.
  closeSync(ARGS_FD);
  tapProcessOutput();

  const app = await listenAppSocket();
  const forwarder = await listenEgressForwarder();
  const servers = [app.server, forwarder];
  const ctx: InjectContext = {
    template: boot.template,
    token: boot.token,
    phase: 'idle',
    setAppHandler: app.setHandler,
  };
  const exitFor = (exit: ExitReport) => {
    ctx.phase = 'exited';
    // Mirrors the app's status, as bwrap reports a signal: 128 + n.
    const signo = exit.signal
      ? (constants.signals as Record<string, number>)[exit.signal]
      : undefined;
    return exit.code ?? (signo !== undefined ? 128 + signo : 1);
  };
  if (boot.template === 'python') {
    ctx.pythonBin = boot.python ?? '/usr/bin/python3';
    ctx.python = await PythonApp.boot(ctx.pythonBin);
    ctx.python.onExit((exit) => {
      // While an inject is pending, its answer carries the exit; afterInject ends us.
      if (ctx.phase !== 'starting') process.exit(exitFor(exit));
    });
  } else if (boot.template === 'node') {
    await preloadNode();
    ctx.node = new NodeApp(() => servers.forEach((s) => s.unref()));
    ctx.node.onExit((exit) => {
      if (ctx.phase !== 'starting') process.exit(exitFor(exit));
    });
  }

  const control = createControlServer(boot.token, {
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
      const { host, port } = ctx.address ?? { host: '127.0.0.1', port: APP_PORT };
      return accepts(host, port, 1000);
    },
    logs: (lines) => ring.last(lines),
    inject: (request, socket) => runInject(ctx, request, socket),
    install: (request) => runInstall(ctx, request),
    afterInject: (status) => {
      const exit = ctx.node?.exit ?? ctx.python?.exit;
      if (status === 422 && exit) process.exit(exitFor(exit));
    },
    stop: () => {
      ctx.python?.kill('SIGTERM');
      process.kill(process.pid, 'SIGTERM');
    },
  });
  servers.push(control);
  await listen(control, `${SOCKET_DIR}/${AGENT_SOCK}`);
  await warmUp(boot.template, boot.token);
  diag({ t: 'ready', ms: Math.round(performance.now() - started) });
}

/** The first line on stdin, read before anything else runs: the token never touches env or argv. */
function readBoot(): BootMessage {
  const buf = Buffer.alloc(4096);
  let text = '';
  while (!text.includes('\n')) {
    let n: number;
    try {
      n = readSync(0, buf, 0, buf.length, null);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EAGAIN') throw err;
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 1);
      continue;
    }
    if (n === 0) break;
    text += buf.toString('utf8', 0, n);
  }
  const boot = JSON.parse(text.slice(0, text.indexOf('\n'))) as BootMessage;
  if (typeof boot.token !== 'string' || boot.token.length < 16) {
    throw new Error('boot message has no token');
  }
  return boot;
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

main().catch((err: unknown) => {
  diag({ t: 'log', level: 'error', msg: 'agent failed to boot', extra: { error: errorText(err) } });
  process.exit(70);
});
