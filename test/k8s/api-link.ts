// A TCP link to the test cluster's API server that a test can cut: a network blip between one
// client (Slipway) and the API server, while everything else (the controllers, the test node)
// still reaches it. While cut, open connections are reset and new ones refused.
import { readFileSync, writeFileSync } from 'node:fs';
import { connect, createServer, type Socket } from 'node:net';
import { join } from 'node:path';
import type { Cluster } from './cluster.js';

export type ApiLink = {
  /** An admin kubeconfig whose server is this link. */
  kubeconfig: string;
  cut(): void;
  restore(): void;
  stop(): Promise<void>;
};

export async function startApiLink(cluster: Cluster): Promise<ApiLink> {
  const target = new URL(cluster.server);
  let cut = false;
  const sockets = new Set<Socket>();
  const track = (s: Socket) => {
    sockets.add(s);
    s.once('close', () => sockets.delete(s));
  };
  const server = createServer((client) => {
    if (cut) return client.resetAndDestroy();
    const upstream = connect({ host: target.hostname, port: Number(target.port) });
    track(client);
    track(upstream);
    client.on('error', () => upstream.destroy());
    upstream.on('error', () => client.destroy());
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  const kubeconfig = join(cluster.dir, 'linked.kubeconfig');
  const text = readFileSync(cluster.kubeconfig, 'utf8');
  writeFileSync(kubeconfig, text.replace(cluster.server, `https://127.0.0.1:${port}`), {
    mode: 0o600,
  });
  return {
    kubeconfig,
    cut() {
      cut = true;
      for (const s of sockets) s.resetAndDestroy();
    },
    restore() {
      cut = false;
    },
    async stop() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
