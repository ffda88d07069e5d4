import type { Server as HttpServer } from 'node:http';
import { Server as HttpsServer } from 'node:https';
import type net from 'node:net';
import type { TLSSocket } from 'node:tls';
import { readProxyLine, type Peer } from './proxy-header.js';

/** A connection that has not said who it relays within this long is dropped. */
const HEADER_TIMEOUT_MS = 5_000;

/** The visitor behind each relayed connection, for the TLS socket the server wraps it in. */
const peers = new WeakMap<net.Socket, Peer>();
const watched = new WeakSet<HttpServer | HttpsServer>();

/**
 * One connection from the front door: its PROXY line is read off, the socket then shows the
 * visitor's address (rate limits, X-Forwarded-For and logs name the visitor, not the front
 * door), and the rest of its bytes go to the server as if it had accepted the connection itself.
 */
export function acceptRelayed(conn: net.Socket, server: HttpServer | HttpsServer): void {
  if (server instanceof HttpsServer && !watched.has(server)) {
    watched.add(server);
    // First of the server's listeners: the others (guards, drain) see the visitor's address.
    server.prependListener('secureConnection', (tls: TLSSocket) => {
      const raw = (tls as TLSSocket & { _parent?: net.Socket })._parent;
      const peer = raw && peers.get(raw);
      if (peer) showPeer(tls, peer);
    });
  }
  conn.setTimeout(HEADER_TIMEOUT_MS, () => conn.destroy());
  conn.on('error', () => conn.destroy());
  readProxyLine(conn, ({ peer }) => {
    conn.setTimeout(0);
    if (peer) {
      showPeer(conn, peer);
      peers.set(conn, peer);
    }
    server.emit('connection', conn);
    // A TLS server reads the socket's own buffer (the bytes after the line) and then its handle
    // itself: resuming the socket here would hand the next bytes to nobody.
    if (!(server instanceof HttpsServer)) conn.resume();
  });
}

export function showPeer(socket: net.Socket, peer: Peer): void {
  Object.defineProperties(socket, {
    remoteAddress: { value: peer.address, configurable: true },
    remotePort: { value: peer.port, configurable: true },
    remoteFamily: { value: peer.address.includes(':') ? 'IPv6' : 'IPv4', configurable: true },
  });
}
