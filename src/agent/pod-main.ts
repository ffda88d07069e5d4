import net from 'node:net';
import { createAgentCore } from './agent-core.js';
import { listenEgressForwarder, tcpBridge, type AppHandler } from './bridges.js';
import { errorText, warn } from './diag.js';
import { ring, tapProcessOutput } from './log-ring.js';
import { placement } from './placement.js';
import { EXIT_LINES } from './protocol.js';
import { createPodControl } from './pod-control.js';
import { PodEvents } from './pod-events.js';
import { readPodSettings } from './pod-settings.js';

/**
 * The agent in a Kubernetes pod (design.md §4, kubernetes runtime): the same core as in a bwrap
 * sandbox, over TCP. The control port takes one `POST /enroll` (authorised by the template's
 * enroll key, from a Secret) that sets this sandbox's own token; every other call needs that
 * token. The app port is the pod's public face: the agent bridges each connection to the app and
 * reports the activity, so idle suspend works with no control plane in the path.
 */
async function main(): Promise<void> {
  const settings = readPodSettings(process.env);
  placement.appPort = settings.appPort;
  placement.proxyPort = settings.proxyPort;
  // The pod's only way out is the egress gate: the source comes through it too.
  placement.sourceProxy = { host: '127.0.0.1', port: settings.proxyPort };
  // No diagnostics pipe in a pod: the agent's JSON lines go to the container's stderr, written
  // past the tap so they never count as the app's output.
  placement.diagFd = 2;
  tapProcessOutput();
  const events = new PodEvents(ring);

  let appHandler: AppHandler = (socket) => socket.destroy();
  const publicServer = net.createServer({ allowHalfOpen: true }, (socket) => {
    socket.on('error', (err) => warn('app port client error', { error: err.message }));
    // Every request counts, kept-alive connections' too: activity is throttled to once a second.
    events.activity();
    socket.on('data', () => events.activity());
    appHandler(socket);
  });
  const forwarder = await listenEgressForwarder(
    () =>
      net.connect({
        host: settings.egressGate.host,
        port: settings.egressGate.port,
        localAddress: settings.podIP,
        allowHalfOpen: true,
      }),
    settings.proxyPort,
  );
  const servers: { unref(): unknown }[] = [publicServer, forwarder];
  const core = await createAgentCore({
    template: settings.template,
    token: '',
    ...(settings.python ? { python: settings.python } : {}),
    setAppHandler: (handler) => (appHandler = handler),
    // Relayed, not handed over: the activity count above reads the socket, which the app's HTTP
    // parser would otherwise take over.
    connectApp: tcpBridge,
    servers: () => servers,
    exit: (code, report) => {
      events.exit(report);
      process.exit(code);
    },
  });

  const controlServer = createPodControl(settings.enrollKey, core.handlers, events, (token) => {
    core.ctx.token = token;
  });
  servers.push(controlServer);
  // An app's own process.exit() ends this process before any callback: the exit is reported
  // from here, synchronously, with what the app runtime recorded of it.
  process.on('exit', (code) => {
    const app = core.ctx.node?.exit ?? core.ctx.python?.exit;
    events.exit(app ?? { code, signal: null, lastLines: ring.last(EXIT_LINES).map((l) => l.text) });
  });
  await listenTcp(controlServer, settings.podIP, settings.agentPort);
  await listenTcp(publicServer, settings.podIP, settings.publicPort);
}

function listenTcp(server: net.Server, host: string, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', (err) =>
      reject(new Error(`cannot listen on ${host}:${port}: ${errorText(err)}`)),
    );
    server.listen(port, host, () => resolve());
  });
}

main().catch((err: unknown) => {
  process.stderr.write(`[slipway] agent failed to boot: ${errorText(err)}\n`);
  process.exit(70);
});
