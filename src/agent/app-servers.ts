import net from 'node:net';
import { tcpBridge, type AppHandler } from './bridges.js';

/**
 * A node app runs in the agent's own process (node-app.ts), so the server it listens with is an
 * object here: a visitor's connection on `app.sock` can be handed to it directly, as if it had
 * accepted it itself, instead of being relayed byte by byte to its TCP port (a second copy of
 * every byte through JavaScript, which halved what an app could serve through the front door).
 */
const servers = new Set<WeakRef<net.Server>>();
const listeningWatchers = new Set<() => void>();
let tracking = false;

/** From now on, every server the app listens with is remembered (weakly). Idempotent. */
export function trackAppServers(): void {
  if (tracking) return;
  tracking = true;
  const listen = net.Server.prototype.listen;
  // The app sees listen() behave exactly as before: this only notes which server called it.
  net.Server.prototype.listen = function (this: net.Server, ...args: unknown[]) {
    servers.add(new WeakRef(this));
    this.once('listening', () => listeningWatchers.forEach((watcher) => watcher()));
    return (listen as (...a: unknown[]) => net.Server).apply(this, args);
  } as typeof listen;
}

/**
 * Where the app's own server in this process listens on `port`, if one does. Such an app is
 * ready without a probe connection: its visitors' connections are handed to that very server.
 */
export function listensHere(port: number): { host: string; port: number } | undefined {
  const address = serverOn(port)?.address();
  if (typeof address !== 'object' || address === null) return undefined;
  // A wildcard bind is reached on loopback; `::` also takes IPv6-only sockets.
  const host = { '::': '::1', '0.0.0.0': '127.0.0.1' }[address.address] ?? address.address;
  return { host, port };
}

/** Calls `watcher` each time one of the app's servers starts listening; returns its undo. */
export function onAppListening(watcher: () => void): () => void {
  listeningWatchers.add(watcher);
  return () => listeningWatchers.delete(watcher);
}

/** The app's server listening on `port`, if the app listens with one in this process. */
function serverOn(port: number): net.Server | undefined {
  for (const ref of servers) {
    const server = ref.deref();
    if (!server) {
      servers.delete(ref);
      continue;
    }
    const address = server.listening ? server.address() : null;
    if (typeof address === 'object' && address?.port === port) return server;
  }
  return undefined;
}

/**
 * Hands each visitor's connection to the app's own server on `port` while it listens there,
 * shown as coming from loopback (as the relay's connections did); otherwise (no such server in
 * this process, or the app closed it) relays to the port as before.
 */
export function appHandler(host: string, port: number): AppHandler {
  const relay = tcpBridge(host, port);
  return (conn) => {
    const server = serverOn(port);
    if (!server) return relay(conn);
    Object.defineProperties(conn, {
      remoteAddress: { value: '127.0.0.1', configurable: true },
      remoteFamily: { value: 'IPv4', configurable: true },
      remotePort: { value: 0, configurable: true },
      localAddress: { value: host, configurable: true },
      localPort: { value: port, configurable: true },
    });
    server.emit('connection', conn);
  };
}
