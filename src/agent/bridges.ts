import { rmSync } from 'node:fs';
import net from 'node:net';
import { errorText, warn } from './diag.js';
import { splice } from '../io/splice.js';
import { APP_SOCK, EGRESS_SOCK, PROXY_PORT, SOCKET_DIR } from './protocol.js';

/** What `app.sock` does with a connection: nothing until inject decides. */
export type AppHandler = (socket: net.Socket) => void;

/**
 * Listens on `app.sock` from boot on, so inject pays nothing for it; connections made before the
 * app is up are closed. The handler is swapped in once the app answers.
 */
export function listenAppSocket(): Promise<{
  server: net.Server;
  setHandler(handler: AppHandler): void;
}> {
  let handler: AppHandler = (socket) => socket.destroy();
  const path = `${SOCKET_DIR}/${APP_SOCK}`;
  rmSync(path, { force: true });
  const server = net.createServer({ allowHalfOpen: true }, (socket) => {
    socket.on('error', (err) => warn('app.sock client error', { error: err.message }));
    handler(socket);
  });
  return listen(server, path).then(() => ({ server, setHandler: (next) => (handler = next) }));
}

/** Raw byte piping to the app's TCP port: websockets, SSE and HTTP/1.1 upgrades just work. */
export function tcpBridge(host: string, port: number): AppHandler {
  return (client) => {
    // No Nagle: a response written in pieces must not wait for a delayed ACK on loopback.
    const upstream = net.connect({ host, port, allowHalfOpen: true, noDelay: true });
    // Nothing flows until the app's end is there (a listener on the visitor's socket, such as
    // the pod agent's activity count, would otherwise read the request away).
    client.pause();
    let connected = false;
    upstream.once('connect', () => {
      connected = true;
      splice(client, upstream);
    });
    upstream.on('error', (err) => {
      warn('app port connection failed', { error: err.message });
      if (!connected) hold(client);
    });
  };
}

/** How long a visitor's connection is kept when the app is gone: the sandbox ends before that. */
const HOLD_MS = 30_000;

/**
 * The app no longer listens (it exited; this sandbox is about to be replaced). The visitor's
 * connection is kept, unanswered, rather than reset: it ends with the sandbox, and a front door
 * then sends its GET again to where the app serves next, instead of a failed request now.
 */
function hold(client: net.Socket): void {
  client.setTimeout(HOLD_MS, () => client.destroy());
  client.resume();
}

/**
 * The app's HTTP(S)_PROXY: every TCP connection to 127.0.0.1:3128 is relayed byte for byte to the
 * egress gate, which reads the CONNECT or absolute-URI request and decides. In a bwrap sandbox the
 * gate is the host's end of `egress.sock` and there is no other way out (the network namespace
 * has loopback only); in a pod it is the control plane's egress port, dialled from the pod's own
 * address, by which the gate knows whose rules apply (the NetworkPolicy allows nothing else).
 */
export function listenEgressForwarder(
  dialGate: () => net.Socket = () =>
    net.connect({ path: `${SOCKET_DIR}/${EGRESS_SOCK}`, allowHalfOpen: true }),
  port: number = PROXY_PORT,
): Promise<net.Server> {
  const server = net.createServer({ allowHalfOpen: true }, (client) => {
    client.on('error', (err) => warn('egress client error', { error: err.message }));
    const gate = dialGate();
    const refuse = (err: Error) => {
      warn('egress gate unreachable', { error: err.message });
      const body = 'egress gate unavailable\n';
      client.end(
        `HTTP/1.1 502 Bad Gateway\r\nContent-Type: text/plain\r\nContent-Length: ${body.length}\r\n` +
          `Connection: close\r\n\r\n${body}`,
      );
    };
    gate.once('error', refuse);
    gate.once('connect', () => {
      gate.off('error', refuse);
      gate.on('error', (err) => warn('egress gate connection error', { error: err.message }));
      splice(client, gate);
    });
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve(server));
  });
}

export function listen(server: net.Server, path: string): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', (err) => reject(new Error(`cannot listen on ${path}: ${errorText(err)}`)));
    server.listen(path, () => resolve());
  });
}
