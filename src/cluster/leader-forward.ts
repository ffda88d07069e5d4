import {
  request as httpRequest,
  type IncomingMessage,
  type OutgoingHttpHeaders,
  type ServerResponse,
} from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { Duplex } from 'node:stream';
import { TLSSocket } from 'node:tls';
import { AppError } from '../errors.js';
import type { LeaderView } from './leader-lease.js';
import {
  FORWARDED_HEADER,
  FORWARDED_FOR_HEADER,
  FORWARDED_PROOF_HEADER,
  type ForwardProof,
} from './forward-proof.js';
import type { PeerTlsOptions } from './peer-tls.js';

/** What a follower does with each request before the server sees it (server.ts `forward`). */
export interface Forwarder {
  /**
   * True when the request was taken (forwarded, or answered 503): the server leaves it.
   * `appHost`: the request is a visitor's, for an app's host.
   */
  request(req: IncomingMessage, res: ServerResponse, appHost: boolean): boolean;
  upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): boolean;
  /**
   * The address the request's client connected from: the socket's peer, or, for a request another
   * replica handed here, the address that replica vouches for with a proof that verifies
   * (forward-proof.ts); undefined when a request marked as handed on carries none: unknown.
   */
  clientAddress(req: IncomingMessage): string | undefined;
}

export interface ForwarderOptions {
  /** How a leader listening with TLS is checked (peer-tls.ts). */
  tls?: PeerTlsOptions;
  /** Vouches to the leader for the client's address, and checks what a follower vouched for. */
  proof?: ForwardProof;
}

/** Answered by every replica itself: its own liveness, readiness (is it the leader?) and metrics. */
const LOCAL = new Set(['/healthz', '/readyz', '/metrics']);

const HOP_BY_HOP = [
  'connection',
  'keep-alive',
  'proxy-connection',
  'proxy-authorization',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
];

const RETRY_AFTER_S = 2;

const NOT_OUR_CERTIFICATE =
  "the leader's certificate is not the one this replica serves; the request was not sent to it";

/**
 * A follower serves the API, MCP and the activator path by handing every request to the leader
 * (the Lease names its address): the one replica that runs the apps' actors, so a deploy, a wake
 * or a log stream meets the state it changes. Its own probes and metrics it answers itself. While
 * no leader is known or it cannot be reached (a failover), the answer is 503 with Retry-After.
 * A leader that presents another certificate than this replica's is refused before a byte of the
 * request is sent to it. The client's address goes along, signed (`proof`): the leader applies
 * its own trust rules to it, never to the follower's address.
 */
export function leaderForwarder(
  view: () => LeaderView,
  { tls, proof }: ForwarderOptions = {},
): Forwarder {
  /** Served here (undefined), handed to the leader (its URL), or refused (why). */
  const target = (req: IncomingMessage, appHost = true): URL | string | undefined => {
    const now = view();
    if (now.leading || (!appHost && LOCAL.has(pathOf(req)))) return undefined;
    if (req.headers[FORWARDED_HEADER] !== undefined) {
      return 'this replica does not lead, and does not hand on a request handed to it';
    }
    if (!now.leaderUrl || !now.holder) return 'no replica leads yet; a failover may be on its way';
    return new URL(now.leaderUrl);
  };
  const send = (req: IncomingMessage, to: URL) => {
    const by = view().identity;
    const headers: OutgoingHttpHeaders = { ...req.headers, [FORWARDED_HEADER]: by };
    // A client's own claims never pass: only what this replica signs does.
    for (const name of [...HOP_BY_HOP, FORWARDED_FOR_HEADER, FORWARDED_PROOF_HEADER]) {
      delete headers[name];
    }
    Object.assign(headers, proof?.sign(req, by));
    if (req.headers.upgrade) {
      Object.assign(headers, { connection: 'upgrade', upgrade: req.headers.upgrade });
    }
    const options = {
      protocol: to.protocol,
      hostname: to.hostname,
      port: to.port,
      method: req.method,
      path: req.url,
      headers,
    };
    return to.protocol === 'https:' ? httpsRequest({ ...options, ...tls }) : httpRequest(options);
  };
  return {
    request(req, res, appHost) {
      const to = target(req, appHost);
      if (to === undefined) return false;
      if (typeof to === 'string') {
        unavailable(res, to);
        return true;
      }
      const upstream = send(req, to);
      upstream.on('response', (answer) => {
        const headers = { ...answer.headers };
        for (const name of HOP_BY_HOP) delete headers[name];
        res.writeHead(answer.statusCode ?? 502, headers);
        answer.pipe(res);
        res.on('close', () => answer.destroy());
      });
      let socket: unknown;
      upstream.on('socket', (s) => (socket = s));
      upstream.on('error', () => {
        // Set by the TLS handshake when the leader's certificate was refused (peer-tls.ts).
        const refused = socket instanceof TLSSocket && Boolean(socket.authorizationError);
        if (res.headersSent) res.destroy();
        else if (refused) unavailable(res, NOT_OUR_CERTIFICATE);
        else unavailable(res, 'the leader cannot be reached; a failover may be on its way');
      });
      req.on('aborted', () => upstream.destroy());
      req.pipe(upstream);
      return true;
    },
    upgrade(req, socket, head) {
      const to = target(req);
      if (to === undefined) return false;
      if (typeof to === 'string') {
        socket.destroy();
        return true;
      }
      const upstream = send(req, to);
      upstream.on('upgrade', (answer, leader, leaderHead) => {
        const lines = [`HTTP/1.1 ${answer.statusCode ?? 101} ${answer.statusMessage ?? ''}`];
        for (let i = 0; i < answer.rawHeaders.length; i += 2) {
          lines.push(`${answer.rawHeaders[i]}: ${answer.rawHeaders[i + 1]}`);
        }
        socket.write(`${lines.join('\r\n')}\r\n\r\n`);
        if (leaderHead.length > 0) socket.write(leaderHead);
        if (head.length > 0) leader.write(head);
        leader.pipe(socket).pipe(leader);
        leader.on('error', () => socket.destroy());
        socket.on('error', () => leader.destroy());
      });
      upstream.on('response', (answer) => {
        answer.resume();
        socket.destroy();
      });
      upstream.on('error', () => socket.destroy());
      upstream.end();
      return true;
    },
    clientAddress(req) {
      const by = req.headers[FORWARDED_HEADER];
      if (by === undefined) return req.socket.remoteAddress;
      return typeof by === 'string' ? proof?.verify(req, by) : undefined;
    },
  };
}

function unavailable(res: ServerResponse, message: string): void {
  res.writeHead(503, { 'content-type': 'application/json', 'retry-after': String(RETRY_AFTER_S) });
  res.end(JSON.stringify(new AppError(503, 'leader_unavailable', message).toBody()));
}

function pathOf(req: IncomingMessage): string {
  const url = req.url ?? '/';
  const q = url.indexOf('?');
  return q === -1 ? url : url.slice(0, q);
}
