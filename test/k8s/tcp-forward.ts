// A TCP forward from an address of the suites' network namespace to another: what the test node
// uses as kube-proxy for the `kubernetes` Service (its ClusterIP and port to the API server on
// 127.0.0.1, which a pod in a network namespace of its own cannot reach), and what a suite uses to
// make a loopback-only server (moto) reachable from such pods. The listening address is added to
// lo unless it is already there.
import { execFileSync } from 'node:child_process';
import { connect, createServer, type Socket } from 'node:net';

export type TcpForward = { host: string; port: number; stop(): Promise<void> };

export async function forwardTcp(
  listen: { host: string; port: number },
  to: { host: string; port: number },
): Promise<TcpForward> {
  const added = addAddress(listen.host);
  const sockets = new Set<Socket>();
  const track = (s: Socket) => {
    sockets.add(s);
    s.once('close', () => sockets.delete(s));
  };
  const server = createServer({ allowHalfOpen: true }, (client) => {
    track(client);
    const upstream = connect(to);
    track(upstream);
    upstream.on('error', () => client.resetAndDestroy());
    client.on('error', () => upstream.destroy());
    client.pipe(upstream);
    upstream.pipe(client);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(listen.port, listen.host, resolve);
  });
  return {
    ...listen,
    async stop() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      if (added) execFileSync('ip', ['addr', 'del', `${listen.host}/32`, 'dev', 'lo']);
    },
  };
}

/** Adds ip/32 to lo; false when it was there already (then it is not ours to remove). */
export function addAddress(ip: string): boolean {
  try {
    execFileSync('ip', ['addr', 'add', `${ip}/32`, 'dev', 'lo'], { stdio: 'pipe' });
    return true;
  } catch (err) {
    if (/File exists|already assigned/.test(String((err as { stderr?: unknown }).stderr))) {
      return false;
    }
    throw err;
  }
}
