import type { Server as HttpServer } from 'node:http';
import { Server as HttpsServer } from 'node:https';
import type { Socket } from 'node:net';

export interface ConnectionGuardOptions {
  /** Absolute time to deliver a request head, from the connection or the previous request. */
  headersTimeoutMs: number;
  /** Connections per client address that have not yet delivered a complete request head. */
  maxPendingPerAddress: number;
}

/** Node's own bounds on the time to send a request head, for `createServer`. */
export function headerTimeouts(options: ConnectionGuardOptions): {
  headersTimeout: number;
  requestTimeout: number;
  connectionsCheckingInterval: number;
  handshakeTimeout: number;
} {
  const headersTimeout = options.headersTimeoutMs;
  return {
    headersTimeout,
    // Node's default (5 min) bounds the whole request: long enough for a 50 MB upload on a slow
    // link; it must not be below headersTimeout.
    requestTimeout: Math.max(300_000, headersTimeout),
    // Node enforces both timeouts only when it sweeps its connections, every 30 s by default:
    // sweep often enough that the bound is real.
    connectionsCheckingInterval: Math.max(100, Math.min(1000, Math.floor(headersTimeout / 4))),
    handshakeTimeout: headersTimeout,
  };
}

/** Marks a connection as having delivered a request head; see guardConnections. */
export type HeadDelivered = (socket: Socket) => void;

/**
 * Slowloris defence for the one listener (control plane and app router alike): a client address
 * may hold only so many connections that owe a request head; one more is closed at once. A
 * connection stops owing when the listener reports a request head on it (`request` or `upgrade`);
 * keep-alive connections between requests are bounded by `keepAliveTimeout`, not by this count.
 */
export function guardConnections(
  server: HttpServer | HttpsServer,
  options: ConnectionGuardOptions,
): HeadDelivered {
  const pending = new Map<string, number>();
  const owing = new WeakSet<Socket>();

  const settle = (socket: Socket): void => {
    if (!owing.delete(socket)) return;
    const address = addressOf(socket);
    const left = (pending.get(address) ?? 1) - 1;
    if (left > 0) pending.set(address, left);
    else pending.delete(address);
  };

  // Over TLS the request's socket is the TLS socket, which exists once the handshake is done; the
  // handshake itself is bounded by `handshakeTimeout` (see headerTimeouts).
  const event = server instanceof HttpsServer ? 'secureConnection' : 'connection';
  server.on(event, (socket: Socket) => {
    const address = addressOf(socket);
    const count = pending.get(address) ?? 0;
    if (count >= options.maxPendingPerAddress) {
      socket.destroy();
      return;
    }
    pending.set(address, count + 1);
    owing.add(socket);
    socket.once('close', () => settle(socket));
  });
  return settle;
}

const addressOf = (socket: Socket): string => socket.remoteAddress ?? 'unknown';
