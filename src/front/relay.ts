import net from 'node:net';
import { Exchanges } from './exchanges.js';
import { proxyLine, readProxyLine } from './proxy-header.js';
import type { Log } from '../logging.js';

export interface RelayOptions {
  /** The control plane's unix socket. */
  socketPath: string;
  /** How long a visitor is held while no control plane listens, before its connection is closed. */
  holdMs: number;
  /** How long a visitor's connection may sit idle with no control plane behind it. */
  idleMs: number;
  log: Log;
}

/** How often a held connection looks for a control plane again. */
const RETRY_MS = 20;

/**
 * Relays one visitor's connection to the control plane, byte for byte, after a PROXY line that
 * names the visitor (`given`: the one the native front door sent, else made here). When the control plane goes (a restart, a crash), the visitor's connection
 * is kept if it was between exchanges, and its unanswered GET or HEAD is sent again to the next
 * control plane; only an exchange cut midway is lost. While none listens, the visitor is held.
 */
export function relay(client: net.Socket, opts: RelayOptions, given?: string): void {
  const exchanges = new Exchanges();
  const header =
    given ??
    proxyLine(
      { address: client.remoteAddress ?? '0.0.0.0', port: client.remotePort ?? 0 },
      { address: client.localAddress ?? '0.0.0.0', port: client.localPort ?? 0 },
    );
  let upstream: net.Socket | undefined;
  let queued: Buffer[] = [];
  let connecting = false;
  let clientEnded = false;

  const connect = (): void => {
    if (connecting || client.destroyed) return;
    connecting = true;
    const deadline = Date.now() + opts.holdMs;
    const attempt = (): void => {
      const next = net.connect(opts.socketPath);
      next.once('connect', () => {
        next.removeAllListeners('error');
        connecting = false;
        attach(next);
      });
      next.once('error', () => {
        next.destroy();
        if (client.destroyed) return;
        if (Date.now() >= deadline) {
          opts.log('info', 'no control plane within the hold time; closing a visitor', {
            holdMs: opts.holdMs,
          });
          client.destroy();
          return;
        }
        setTimeout(attempt, RETRY_MS).unref();
      });
    };
    attempt();
  };

  const attach = (next: net.Socket): void => {
    if (client.destroyed) {
      next.destroy();
      return;
    }
    upstream = next;
    client.setTimeout(0);
    next.write(header);
    for (const chunk of queued) next.write(chunk);
    queued = [];
    next.on('data', (chunk: Buffer) => {
      exchanges.fromServer(chunk);
      if (!client.write(chunk)) next.pause();
    });
    next.on('drain', () => client.resume());
    next.on('error', () => next.destroy());
    next.once('close', () => gone(next));
    if (clientEnded) next.end();
    client.resume();
  };

  const gone = (was: net.Socket): void => {
    if (upstream !== was) return;
    upstream = undefined;
    if (client.destroyed) return;
    if (clientEnded) {
      client.destroy();
      return;
    }
    const next = exchanges.whenGone();
    if (next.kind === 'close') {
      client.end();
      client.destroySoon();
    } else if (next.kind === 'replay') {
      queued = [next.bytes];
      client.pause();
      connect();
    } else {
      // Between exchanges: the next request brings up a connection to whoever listens then.
      client.setTimeout(opts.idleMs);
    }
  };

  client.on('data', (chunk: Buffer) => {
    exchanges.fromClient(chunk);
    if (upstream) {
      if (!upstream.write(chunk)) client.pause();
      return;
    }
    queued.push(chunk);
    client.pause();
    // A request: the idle timer of a visitor kept with no control plane behind it no longer
    // applies; the hold does, however long the next control plane takes to listen.
    client.setTimeout(0);
    connect();
  });
  client.on('drain', () => upstream?.resume());
  client.on('timeout', () => client.destroy());
  client.on('end', () => {
    clientEnded = true;
    if (upstream) upstream.end();
    else if (!connecting) client.destroy();
  });
  client.on('error', () => client.destroy());
  client.once('close', () => upstream?.destroy());
  connect();
}

/** A connection from the native front door: its own PROXY line first, then the visitor's bytes. */
export function relayProxied(client: net.Socket, opts: RelayOptions): void {
  client.on('error', () => client.destroy());
  readProxyLine(client, ({ text }) => relay(client, opts, text));
}
