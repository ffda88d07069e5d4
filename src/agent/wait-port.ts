import net from 'node:net';

export type WaitOutcome = { kind: 'ready'; host: string } | { kind: 'gone' } | { kind: 'timeout' };

/** Between attempts: a refused loopback connect costs microseconds, so poll tightly. */
const INTERVAL_MS = 1;

/**
 * Resolves once something accepts on the port (IPv4 loopback first, then IPv6 for apps that bound
 * `::1` only), or as soon as `gone` settles (the app exited), or at the deadline. Nothing here
 * holds the event loop open: a node app runs in this process and its own handles must decide.
 */
export function waitForPort(
  port: number,
  deadline: number,
  gone: Promise<unknown>,
): Promise<WaitOutcome> {
  const hosts = ['127.0.0.1', '::1'];
  let attempt = 0;
  let settled = false;
  return new Promise((resolve) => {
    const finish = (outcome: WaitOutcome) => {
      if (settled) return;
      settled = true;
      resolve(outcome);
    };
    void gone.then(() => finish({ kind: 'gone' }));
    const tryOnce = () => {
      if (settled) return;
      if (Date.now() > deadline) return finish({ kind: 'timeout' });
      const host = hosts[attempt % hosts.length] ?? '127.0.0.1';
      attempt += 1;
      const socket = net.connect({ host, port });
      socket.unref();
      socket.once('connect', () => {
        socket.destroy();
        finish({ kind: 'ready', host });
      });
      socket.once('error', () => {
        socket.destroy();
        // Every other attempt is IPv6: go round again straight away, then pause.
        if (attempt % hosts.length !== 0) tryOnce();
        else setTimeout(tryOnce, INTERVAL_MS).unref();
      });
    };
    tryOnce();
  });
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
