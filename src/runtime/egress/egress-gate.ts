import { splice } from '../../io/splice.js';
/**
 * The egress gate (design.md §4), shared by both runtimes: a bwrap sandbox's `egress.sock` (the
 * agent relays the app's proxy connections there) or, on Kubernetes, the control plane's egress
 * port, where a pod's connections arrive from its own address. The gate reads one HTTP proxy
 * request (CONNECT or absolute-URI), checks it against the app's allowed_hosts and the
 * private-address rules, and then becomes a plain byte pipe to the vetted address.
 */
import net from 'node:net';
import { connectFirst, errorText, withTimeout } from './egress-connect.js';
import { createEgressResolver, type Resolve } from './egress-dns.js';
import { connectionGate, egressLimits, type EgressLimits } from './egress-limits.js';
import { normalizeHost, parseIp, privateRange } from './egress-policy.js';
import { parseHead, scanHead, type EgressRequest } from './egress-request.js';
import { indexMisuse, readOnly } from './egress-index.js';
import { cutDisallowed, EgressRules, type Tunnel } from './egress-rules.js';
import type { Log } from '../../logging.js';

export { hostAllowed, isPrivateAddress, targetAllowed } from './egress-policy.js';

export type EgressGateOptions = GateTuning &
  (
    | {
        /** The app's `egress.allowed_hosts`; empty means no egress at all. */
        allowedHosts: string[];
        /** The operator's `runtime.egress.allowPrivate`: names, addresses or CIDRs. */
        allowPrivate: string[];
      }
    | {
        /** Rules the owner may change later; open tunnels they no longer allow are cut. */
        rules: EgressRules;
      }
  );

interface GateTuning {
  /** Every address a name resolves to; default: /etc/hosts, then c-ares (no thread pool). */
  resolve?: Resolve;
  /** Bound on resolving plus connecting upstream; default 10 s. */
  connectTimeoutMs?: number;
  /** Connection caps and the head deadline; defaults in egress-limits.ts. */
  limits?: Partial<EgressLimits>;
  log?: Log;
}
/** How long a refused client may keep sending before its socket is dropped. */
const LINGER_MS = 2_000;
const OUTCOME: Record<number, string> = { 400: 'bad request', 403: 'denied', 408: 'bad request' };
const REASONS: Record<number, string> = {
  400: 'Bad Request',
  403: 'Forbidden',
  408: 'Request Timeout',
  502: 'Bad Gateway',
};

/** One for all gates: one /etc/hosts cache, one c-ares channel. */
let systemResolve: Resolve | undefined;

/** The caller listens on the sandbox's `egress.sock` and owns the server's own 'error' events. */
export function createEgressGate(opts: EgressGateOptions): net.Server {
  const log = opts.log ?? (() => undefined);
  const resolve = opts.resolve ?? (systemResolve ??= createEgressResolver());
  const timeoutMs = opts.connectTimeoutMs ?? 10_000;
  const limits = egressLimits(opts.limits ?? {});
  const admitConnection = connectionGate(limits, log);
  const rules = 'rules' in opts ? opts.rules : new EgressRules(opts, log);
  const tunnels = new Set<Tunnel>();
  // A tunnel opened under wider rules (the install's registry) must not outlive them.
  rules.onChange(() => cutDisallowed(tunnels, rules, log));

  function refuse(socket: net.Socket, status: number, body: string, extra: object): void {
    log('info', `egress ${OUTCOME[status] ?? 'failed'}`, { ...extra, status, reason: body });
    if (socket.destroyed) return;
    const text = `${body}\n`;
    socket.end(
      `HTTP/1.1 ${status} ${REASONS[status] ?? 'Error'}\r\nContent-Type: text/plain; charset=utf-8\r\n` +
        `Content-Length: ${Buffer.byteLength(text)}\r\nConnection: close\r\n\r\n${text}`,
    );
    // Drain what the client still sends: closing on unread input means a RST that can eat the reply.
    socket.resume();
    setTimeout(() => socket.destroy(), LINGER_MS).unref();
  }

  async function admit(client: net.Socket, req: EgressRequest, rest: Buffer): Promise<void> {
    const host = normalizeHost(req.host);
    const target = { host, port: req.port };
    const where = { ...target, method: req.kind === 'connect' ? 'CONNECT' : req.method };
    const refusal = rules.refusal(host, req.port);
    if (refusal) return refuse(client, 403, `egress to ${host} refused: ${refusal}`, where);
    const access = rules.access(host, req.port);
    const misuse = indexMisuse(access, req);
    if (misuse) return refuse(client, 403, `egress to ${host} refused: ${misuse}`, where);
    let addresses: string[];
    try {
      addresses = parseIp(host) ? [host] : await withTimeout(resolve(host), timeoutMs, 'resolving');
    } catch (err) {
      return refuse(client, 502, `egress to ${host}: cannot resolve (${errorText(err)})`, where);
    }
    if (addresses.length === 0 || !addresses.every((a) => parseIp(a))) {
      return refuse(client, 502, `egress to ${host}: the resolver gave no usable address`, where);
    }
    // Every address, not just the one used: a name that points anywhere inside may not be used.
    for (const address of addresses) {
      const range = privateRange(address);
      if (range && !rules.allowsPrivate(target, address)) {
        const body = `egress to ${host} refused: it resolves to ${address}, ${range}`;
        return refuse(client, 403, body, { ...where, address });
      }
    }
    if (client.destroyed) return;
    let upstream: net.Socket;
    try {
      upstream = await connectFirst(addresses, req.port, timeoutMs);
    } catch (err) {
      return refuse(client, 502, `egress to ${host}:${req.port} failed: ${errorText(err)}`, where);
    }
    if (client.destroyed) {
      upstream.destroy();
      return;
    }
    const tunnel: Tunnel = { ...target, address: upstream.remoteAddress, client, upstream };
    // The rules may have narrowed while this one was resolving and connecting.
    if (!rules.permits(tunnel)) {
      upstream.destroy();
      return refuse(client, 403, `egress to ${host} refused: no longer allowed`, where);
    }
    log('info', 'egress allowed', { ...where, address: upstream.remoteAddress });
    tunnels.add(tunnel);
    client.once('close', () => tunnels.delete(tunnel));
    if (req.kind === 'connect') client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
    else upstream.write(req.upstreamHead);
    if (access === 'index-read') return readOnly(client, upstream);
    if (rest.length > 0) upstream.write(rest);
    splice(client, upstream);
  }

  function onConnection(client: net.Socket): void {
    if (!admitConnection(client)) return;
    client.on('error', (err) => log('info', 'egress: client socket error', { error: err.message }));
    let buf = Buffer.alloc(0);
    // From accept, not from the last byte: a client trickling a byte at a time gains nothing.
    const headTimer = setTimeout(() => {
      stopReading();
      refuse(client, 408, 'request head not received in time', {});
    }, limits.headTimeoutMs);
    const stopReading = () => {
      clearTimeout(headTimer);
      client.off('data', onData);
      client.off('end', onEnd);
      client.pause();
    };
    const onData = (chunk: Buffer) => {
      buf = Buffer.concat([buf, chunk]);
      const scan = scanHead(buf);
      if (scan.state === 'partial') return;
      stopReading();
      if (scan.state === 'too-large') return refuse(client, 400, 'request head too large', {});
      const parsed = parseHead(scan.head);
      if (!parsed.ok) return refuse(client, 400, `bad proxy request: ${parsed.reason}`, {});
      admit(client, parsed.request, scan.rest).catch((err: unknown) => {
        refuse(client, 502, `egress failed: ${errorText(err)}`, {});
      });
    };
    // Gone before finishing its head: there is nobody to answer.
    const onEnd = () => {
      clearTimeout(headTimer);
      client.destroy();
    };
    client.on('data', onData);
    client.on('end', onEnd);
    client.once('close', () => clearTimeout(headTimer));
  }

  return net.createServer({ allowHalfOpen: true }, onConnection);
}
