import { isIP } from 'node:net';
import { join } from 'node:path';
import { REPLICA_HEADERS } from '../../cluster/forward-proof.js';
import { ACCESS_FORMAT, ACCESS_LINE_BYTES, ACCESS_RING, ACCESS_RING_BYTES } from './access-ring.js';

/** Where the native front door keeps its sockets and files: all under `<dataDir>/front`. */
export function haproxyPaths(dir: string) {
  return {
    dir,
    config: join(dir, 'haproxy.cfg'),
    /** The runtime API (admin level): route changes and counters. */
    admin: join(dir, 'admin.sock'),
    /** The master process's CLI: reloads. */
    master: join(dir, 'master.sock'),
    /** `<host> slot_<n>` per Ready public app. */
    map: join(dir, 'routes.map'),
    /** The control plane's unix socket (PROXY protocol v1 in front of each connection). */
    controlPlane: join(dir, 'cp.sock'),
    /** The control plane's socket for requests a freed slot still gets (hold-listener.ts). */
    hold: join(dir, 'hold.sock'),
    /** The certificate and its key in one file (HAProxy's `crt`), when TLS is on: mode 0600. */
    tls: join(dir, 'tls.pem'),
    /** The relay's socket: it holds visitors while no control plane listens (relay.ts). */
    relay: join(dir, 'relay.sock'),
    /** The relay's bundle, which HAProxy's master runs beside its worker. */
    relayBundle: join(dir, 'front.mjs'),
    /** `slots/<n>.sock`: a symlink to the app socket link of the sandbox slot n serves. */
    slot: (n: number) => join(dir, 'slots', `${n}.sock`),
    slots: join(dir, 'slots'),
  };
}

export type HaproxyPaths = ReturnType<typeof haproxyPaths>;

export interface HaproxySettings {
  host: string;
  port: number;
  /** Backends for apps: each Ready public app takes one, two while it switches. */
  slots: number;
  /** The worker's threads (`nbthread`). */
  threads: number;
  /** Time a client has to send a whole request head (slowloris). */
  headersTimeoutMs: number;
  /** The Node binary that runs the relay. */
  node: string;
  /** TLS is on: the proxy ends it with `paths.tls`; its digest, so a new certificate reloads. */
  tls?: { sha256: string };
  /** The log level is debug: each direct request's line goes to the access ring (access-ring.ts). */
  accessLog?: boolean;
}

/** The backend name of slot n, as the route map holds it. */
export const slotBackend = (n: number): string => `slot_${n}`;

/**
 * The header by which the control plane says its answer ends the visitor's connection (a drain's).
 * HAProxy takes a server's `Connection: close` for its own connection to that server only, and
 * keeps the visitor's open; this one it turns into `Connection: close` to the visitor, and drops.
 */
export const CLOSE_MARK = 'x-slipway-close';

/** Request heads above this go to the control plane, which answers them as it does any (431). */
const MAX_HEAD_BYTES = 16 * 1024;
/**
 * A request buffer that holds a head of MAX_HEAD_BYTES (as HAProxy stores it: a few bytes more a
 * header) plus the headers we add. No bigger: each request pays for its buffer's size, about
 * 10 µs of CPU at 32 KiB against 16 KiB here, as much as the rest of the config together, because
 * a GET or HEAD that may be sent again (`retry-on empty-response`) is first copied, the whole
 * buffer and not just the request (docs/data-path.md).
 */
const BUFFER_BYTES = 20 * 1024;
/**
 * The request's host as the route map holds it: lower case, without a port or a trailing dot
 * (one regular expression: it runs on every request).
 */
const HOST = 'req.fhdr(host),lower,regsub(\\.?:[0-9]+$|\\.$,)';
/** Connections to one sandbox at once; more wait in the slot's queue (the router's own bound). */
const MAX_CONNS_PER_APP = 256;
/** A failed connection is retried at once: enough for one to land on the backup server. */
const RETRIES = 3;
/**
 * A server that refuses one connection is marked down at once, so the retry goes to its backup;
 * it is checked again this often (the control plane), or marked up when a route names it (slots).
 */
const MARK_DOWN = 'observe layer4 error-limit 1 on-error mark-down';

/**
 * The native front door's configuration (design.md §10). A request goes straight to the app's
 * socket only when its host is in the route map (a Ready public app) and nothing about it needs
 * the control plane: one Host header, an origin-form target, a head within the limit, no Slipway
 * credential to cut. Everything else goes to the control plane, which applies every rule itself.
 * A request whose connection fails is tried again on the backup; a GET or HEAD that got no answer
 * at all is tried again too; nothing else is.
 */
export function haproxyConfig(settings: HaproxySettings, paths: HaproxyPaths): string {
  const bind = isIP(settings.host) === 6 ? `ipv6@${settings.host}` : settings.host;
  // Under TLS the proxy ends it for the apps it routes, and speaks TLS again to the control
  // plane, whose listener is the same HTTPS server as without a front door (its certificate is
  // the one served here, on a socket only this proxy reaches: nothing to verify).
  const tls = settings.tls !== undefined;
  const ssl = tls ? ` ssl crt ${paths.tls} alpn http/1.1` : '';
  const toControl = tls ? ' ssl verify none' : '';
  const proto = tls ? 'https' : 'http';
  const lines = [
    'global',
    `  stats socket ${paths.admin} mode 600 level admin`,
    '  stats timeout 1m',
    `  tune.bufsize ${BUFFER_BYTES}`,
    `  nbthread ${settings.threads}`,
    '',
    ...accessRing(settings),
    'defaults',
    '  mode http',
    '  timeout connect 5s',
    '  timeout client 75s',
    `  timeout http-request ${settings.headersTimeoutMs}ms`,
    '  timeout http-keep-alive 72s',
    '  timeout server 10m',
    '  timeout tunnel 1h',
    '  timeout queue 30s',
    `  retries ${RETRIES}`,
    '  retry-on conn-failure empty-response',
    '  option redispatch 1',
    // A server connection stays its client's: a slot handed to another app never carries a
    // request of one visitor over a connection opened for another.
    '  http-reuse never',
    ...errorPages(),
    '',
    'frontend visitors',
    `  bind ${bind}:${settings.port}${ssl}`,
    ...routeLookup(settings, paths),
    '  acl routed var(txn.slot) -m found',
    '  acl one_host req.fhdr_cnt(host) eq 1',
    '  acl one_forwarded req.fhdr_cnt(x-forwarded-for) le 1',
    '  acl origin_form url_beg /',
    `  acl fits req.hdrs,length le ${MAX_HEAD_BYTES}`,
    '  acl bearer req.fhdr(authorization) -m reg -i ^bearer[[:space:]]',
    '  acl access_cookie req.fhdr(cookie) -m sub slipway_access_',
    '  http-request set-var(txn.direct) bool(true) if routed one_host one_forwarded origin_form fits !bearer !access_cookie',
    '  acl direct var(txn.direct) -m bool',
    '  http-request disable-l7-retry if !METH_GET !{ method HEAD }',
    '  http-request set-header X-Forwarded-For "%[req.fhdr(x-forwarded-for)], %[src]" if direct { req.fhdr(x-forwarded-for) -m found }',
    // None to replace: added, not set (a set looks for the header to remove first).
    '  http-request add-header X-Forwarded-For %[src] if direct !{ req.fhdr(x-forwarded-for) -m found }',
    '  http-request set-header X-Forwarded-Host %[req.fhdr(host)] if direct',
    `  http-request set-header X-Forwarded-Proto ${proto} if direct`,
    '  http-request del-header proxy-connection if direct',
    '  http-request del-header keep-alive if direct',
    // Between control-plane replicas only (forward-proof.ts): no app sees them.
    ...REPLICA_HEADERS.map((name) => `  http-request del-header ${name} if direct`),
    ...accessLog(settings),
    '  use_backend %[var(txn.slot)] if direct',
    '  default_backend control',
    '',
    // The control plane, or while it is away (a restart), the relay: it holds the visitor until
    // a control plane listens again, and sends an unanswered GET again (relay.ts).
    'backend control',
    // A TLS handshake on a loaded host can take longer than the check interval.
    '  timeout check 2s',
    ...closeOnMark(),
    `  server cp unix@${paths.controlPlane} send-proxy${toControl} check inter 500ms rise 1 fall 1 check-send-proxy${tls ? ' check-ssl' : ''} ${MARK_DOWN}`,
    `  server relay unix@${paths.relay} send-proxy${toControl} backup`,
    '',
    // Beside the worker, restarted with it: the relay the control backend falls back to.
    'program relay',
    `  command ${settings.node} ${paths.relayBundle}`,
  ];
  for (let n = 0; n < settings.slots; n += 1) {
    // A slot's app server fails once its sandbox went: the request, and the GETs the proxy
    // retries, go to the control plane's hold socket, whose router waits for the app's next one.
    lines.push(
      '',
      `backend ${slotBackend(n)}`,
      // The hold socket is the control plane's too: a drain's answer there ends the visit as well.
      ...closeOnMark(),
      `  server app unix@${paths.slot(n)} maxconn ${MAX_CONNS_PER_APP} check inter 1h ${MARK_DOWN}`,
      `  server hold unix@${paths.hold} backup`,
    );
  }
  return `${lines.join('\n')}\n`;
}

/**
 * The slot of the request's host, from the route map. At debug the host is kept for the access
 * line too; otherwise no variable holds it (each costs an allocation on every request).
 */
function routeLookup(settings: HaproxySettings, paths: HaproxyPaths): string[] {
  if (!settings.accessLog) return [`  http-request set-var(txn.slot) ${HOST},map(${paths.map})`];
  return [
    `  http-request set-var(txn.host) ${HOST}`,
    `  http-request set-var(txn.slot) var(txn.host),map(${paths.map})`,
  ];
}

/**
 * At debug, the access lines of the requests the proxy carries straight to apps, in a ring of
 * bounded memory the control plane follows (access-ring.ts); none otherwise, so the default pays
 * nothing. The control plane logs the requests it answers itself.
 */
function accessRing(settings: HaproxySettings): string[] {
  if (!settings.accessLog) return [];
  return [
    `ring ${ACCESS_RING}`,
    '  format raw',
    `  maxlen ${ACCESS_LINE_BYTES}`,
    `  size ${ACCESS_RING_BYTES}`,
    '',
  ];
}

function accessLog(settings: HaproxySettings): string[] {
  if (!settings.accessLog) return [];
  return [
    `  log ring@${ACCESS_RING} local0`,
    `  log-format "${ACCESS_FORMAT}"`,
    '  http-request set-log-level silent if !direct',
  ];
}

/** Turns the control plane's CLOSE_MARK into `Connection: close` to the visitor. */
const closeOnMark = (): string[] => [
  `  http-response set-header connection close if { res.hdr(${CLOSE_MARK}) -m found }`,
  `  http-response del-header ${CLOSE_MARK}`,
];

/** HAProxy's own answers (a malformed request, a timeout) in the API's error body and codes. */
function errorPages(): string[] {
  const pages: [number, string, string][] = [
    [400, 'bad_request', 'the request is malformed'],
    [408, 'bad_request', 'the request head did not arrive in time'],
    [500, 'internal', 'the front door failed'],
    [502, 'not_ready', 'the app did not answer'],
    [503, 'not_ready', 'nothing can answer this request now; retry shortly'],
    [504, 'not_ready', 'the app did not answer in time'],
  ];
  return pages.map(
    ([status, code, message]) =>
      `  http-error status ${status} content-type application/json string '${JSON.stringify({ code, message })}'`,
  );
}
