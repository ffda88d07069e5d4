import net from 'node:net';
import { cpuTicks, listeners, type Listener } from './listeners.js';

export type WaitOutcome =
  | { kind: 'ready'; host: string; port: number }
  | { kind: 'gone' }
  | { kind: 'idle' }
  | { kind: 'timeout'; ports: number[] };

/** Between attempts: a refused loopback connect costs microseconds, so poll tightly. */
const INTERVAL_MS = 1;
/** How often the socket tables and CPU counters are read. */
const SCAN_MS = 50;
/**
 * CPU our own process spent between two scans beyond what polling costs: a node app runs in it,
 * and its code holding our event loop is work. Wall-clock lag alone is not: a loaded host delays
 * every timer without the app doing anything.
 */
const OWN_CPU_MS = 100;
/** A lone listener on another port must stay alone this long before it is taken for the app's. */
const OTHER_PORT_MS = 250;
/** No listener, no output and no CPU for this long: the app waits for nothing (issue 10). */
export const IDLE_MS = 5_000;

export interface WaitOptions {
  /** Ports of the agent's own (the egress proxy), never the app's. */
  ignore: number[];
  /** A count that grows with each line the app prints: output is a sign of life. */
  output: () => number;
  /** A node app's own server in this process, once it listens on the port: ready, no probe. */
  listensHere?: (port: number) => { host: string; port: number } | undefined;
  /** Subscribes to the app's servers starting to listen; returns the undo. */
  onListening?: (watcher: () => void) => () => void;
}

/**
 * Resolves once the app accepts on `port` (IPv4 loopback first, then IPv6 for apps that bound
 * `::1` only), or at once when its own server in this process listens there; or once it has
 * listened on exactly one other TCP port for a moment (routed there: tutorials hard-code 3000);
 * or as soon as `gone` settles (the app exited); or once it has been idle for IDLE_MS without
 * listening anywhere; or at the deadline. Nothing here holds the event loop open: a node app runs
 * in this process and its own handles must decide.
 */
export function waitForApp(
  port: number,
  deadline: number,
  gone: Promise<unknown>,
  opts: WaitOptions,
): Promise<WaitOutcome> {
  const hosts = ['127.0.0.1', '::1'];
  let attempt = 0;
  let settled = false;
  let scanner: NodeJS.Timeout | undefined;
  let unwatch: (() => void) | undefined;
  return new Promise((resolve) => {
    const finish = (outcome: WaitOutcome) => {
      if (settled) return;
      settled = true;
      clearInterval(scanner);
      unwatch?.();
      resolve(outcome);
    };
    const here = (): boolean => {
      const found = opts.listensHere?.(port);
      if (found) finish({ kind: 'ready', ...found });
      return found !== undefined;
    };
    void gone.then(() => finish({ kind: 'gone' }));
    const tryOnce = () => {
      if (settled || here()) return;
      if (Date.now() > deadline) return finish({ kind: 'timeout', ports: others(opts, port) });
      const host = hosts[attempt % hosts.length] ?? '127.0.0.1';
      attempt += 1;
      const socket = net.connect({ host, port });
      socket.unref();
      socket.once('connect', () => {
        socket.destroy();
        finish({ kind: 'ready', host, port });
      });
      socket.once('error', () => {
        socket.destroy();
        // Every other attempt is IPv6: go round again straight away, then pause.
        if (attempt % hosts.length !== 0) tryOnce();
        else setTimeout(tryOnce, INTERVAL_MS).unref();
      });
    };
    // After `gone`'s callback: an app that exited while loading is not ready, whatever it bound.
    void Promise.resolve().then(() => {
      if (settled || here()) return;
      unwatch = opts.onListening?.(here);
      scanner = setInterval(watch(port, opts, finish), SCAN_MS).unref();
      tryOnce();
    });
  });
}

/** The periodic look at the sandbox: another port to route to, or an app doing nothing. */
function watch(port: number, opts: WaitOptions, finish: (outcome: WaitOutcome) => void) {
  let lastLife = Date.now();
  let ownCpu = process.cpuUsage();
  let output = opts.output();
  let cpu = cpuTicks(process.pid);
  let lone: { listener: Listener; since: number } | undefined;
  return () => {
    const now = Date.now();
    const nextCpu = cpuTicks(process.pid);
    const worked = [...nextCpu].some(([pid, ticks]) => ticks > (cpu.get(pid) ?? -1));
    const spoke = opts.output() !== output;
    const own = process.cpuUsage(ownCpu);
    const computed = (own.user + own.system) / 1000 >= OWN_CPU_MS;
    if (worked || spoke || computed) lastLife = now;
    [cpu, output, ownCpu] = [nextCpu, opts.output(), process.cpuUsage()];
    const open = listeners().filter((l) => !opts.ignore.includes(l.port));
    if (open.length > 0) lastLife = now;
    const ports = new Set(open.map((l) => l.port));
    const [only] = open;
    if (ports.size !== 1 || only === undefined || only.port === port) {
      lone = undefined;
    } else if (lone?.listener.port !== only.port) {
      lone = { listener: only, since: now };
    } else if (now - lone.since >= OTHER_PORT_MS) {
      finish({ kind: 'ready', ...lone.listener });
    }
    if (open.length === 0 && now - lastLife >= IDLE_MS) finish({ kind: 'idle' });
  };
}

function others(opts: WaitOptions, port: number): number[] {
  const ports = listeners().map((l) => l.port);
  return [...new Set(ports)]
    .filter((p) => p !== port && !opts.ignore.includes(p))
    .sort((a, b) => a - b);
}

/** True when something accepts on host:port within the timeout. */
export function accepts(host: string, port: number, timeoutMs: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host, port });
    const timer = setTimeout(() => done(false), timeoutMs);
    const done = (ok: boolean) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(ok);
    };
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}
