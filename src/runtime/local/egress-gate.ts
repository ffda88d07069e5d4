import { splice } from '../../agent/splice.js';
/**
 * The egress gate (design.md §4): the host end of a sandbox's `egress.sock`. The in-sandbox agent
 * relays every connection the app makes to its proxy at 127.0.0.1:3128 here; the gate reads one
 * HTTP proxy request (CONNECT or absolute-URI), checks it against the app's allowed_hosts and the
 * private-address rules, and then becomes a plain byte pipe to the vetted address.
 */
import { lookup } from 'node:dns/promises';
import net from 'node:net';
import { normalizeHost, parseIp, privateRange } from './egress-policy.js';
import { parseHead, scanHead, type EgressRequest } from './egress-request.js';
import { cutDisallowed, EgressRules, type Tunnel } from './egress-rules.js';

export { hostAllowed, isPrivateAddress } from './egress-policy.js';

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
  /** Every address a name resolves to; defaults to the system resolver (dns.lookup, all). */
  resolve?: (host: string) => Promise<string[]>;
  /** Bound on resolving plus connecting upstream; default 10 s. */
  connectTimeoutMs?: number;
  log?: (msg: string, extra?: object) => void;
}

/** A client that has not finished its request head by then is not going to. */
const HEAD_TIMEOUT_MS = 30_000;
/** How long a refused client may keep sending before its socket is dropped. */
const LINGER_MS = 2_000;
const OUTCOME: Record<number, string> = { 400: 'bad request', 403: 'denied', 408: 'bad request' };
const REASONS: Record<number, string> = {
  400: 'Bad Request',
  403: 'Forbidden',
  408: 'Request Timeout',
  502: 'Bad Gateway',
};

const systemResolve = async (host: string): Promise<string[]> =>
  (await lookup(host, { all: true })).map((a) => a.address);

/** The caller listens on the sandbox's `egress.sock` and owns the server's own 'error' events. */
export function createEgressGate(opts: EgressGateOptions): net.Server {
  const log = opts.log ?? (() => undefined);
  const resolve = opts.resolve ?? systemResolve;
  const timeoutMs = opts.connectTimeoutMs ?? 10_000;
  const rules = 'rules' in opts ? opts.rules : new EgressRules(opts, log);
  const tunnels = new Set<Tunnel>();
  // A tunnel opened under wider rules (the install's registry) must not outlive them.
  rules.onChange(() => cutDisallowed(tunnels, rules, log));

  function refuse(socket: net.Socket, status: number, body: string, extra: object): void {
    log(`egress ${OUTCOME[status] ?? 'failed'}`, { ...extra, status, reason: body });
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
    const where = { host, port: req.port, method: req.kind === 'connect' ? 'CONNECT' : req.method };
    if (!rules.allows(host)) {
      const why =
        rules.allowedHosts.length === 0 ? ' (the list is empty: this app has no egress)' : '';
      const body = `egress to ${host} refused: not in egress.allowed_hosts${why}`;
      return refuse(client, 403, body, where);
    }
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
      if (range && !rules.allowsPrivate(host, address)) {
        const body = `egress to ${host} refused: it resolves to ${address}, a ${range} address`;
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
    const tunnel: Tunnel = { host, address: upstream.remoteAddress, client, upstream };
    // The rules may have narrowed while this one was resolving and connecting.
    if (!rules.permits(tunnel)) {
      upstream.destroy();
      return refuse(client, 403, `egress to ${host} refused: no longer allowed`, where);
    }
    log('egress allowed', { ...where, address: upstream.remoteAddress });
    if (req.kind === 'connect') client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
    else upstream.write(req.upstreamHead);
    if (rest.length > 0) upstream.write(rest);
    tunnels.add(tunnel);
    client.once('close', () => tunnels.delete(tunnel));
    splice(client, upstream);
  }

  function onConnection(client: net.Socket): void {
    client.on('error', (err) => log('egress: client socket error', { error: err.message }));
    let buf = Buffer.alloc(0);
    const stopReading = () => {
      client.off('data', onData);
      client.off('end', onEnd);
      client.setTimeout(0);
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
    const onEnd = () => client.destroy();
    client.on('data', onData);
    client.on('end', onEnd);
    client.setTimeout(HEAD_TIMEOUT_MS, () => {
      stopReading();
      refuse(client, 408, 'request head not received in time', {});
    });
  }

  return net.createServer({ allowHalfOpen: true }, onConnection);
}

/** Tries the vetted addresses in the resolver's order, all within one deadline. */
async function connectFirst(addresses: string[], port: number, timeoutMs: number) {
  const deadline = Date.now() + timeoutMs;
  const failures: string[] = [];
  for (const address of addresses) {
    try {
      return await connectOnce(address, port, Math.max(1, deadline - Date.now()));
    } catch (err) {
      failures.push(`${address}: ${errorText(err)}`);
    }
  }
  throw new Error(failures.join('; '));
}

function connectOnce(address: string, port: number, timeoutMs: number): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    // An address, not a name: net.connect does no lookup, so DNS cannot be rebound under us.
    const socket = net.connect({ host: address, port, allowHalfOpen: true });
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`connect timed out after ${timeoutMs} ms`));
    }, timeoutMs);
    // Stays attached for the socket's life; once connected, reject is a no-op and splice reacts.
    socket.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    socket.once('connect', () => {
      clearTimeout(timer);
      resolve(socket);
    });
  });
}

function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} timed out after ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

function errorText(err: unknown): string {
  return err instanceof Error ? ((err as NodeJS.ErrnoException).code ?? err.message) : String(err);
}
