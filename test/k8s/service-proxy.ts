// kube-proxy's part for one Service, which the test cluster has no kube-proxy for: a connection to
// the Service's ClusterIP and port goes to a ready endpoint of its EndpointSlices, read when the
// connection comes (whoever wrote them: the EndpointSlice controller for a Service with a
// selector, Slipway for one without). The client's own address stays the source, as kube-proxy's
// DNAT keeps it; with no ready endpoint the connection is reset, as kube-proxy's REJECT rule does.
// The ClusterIP is added to lo, the suites' own (netns.sh), as the test node's pod addresses are.
import { execFileSync } from 'node:child_process';
import { connect, createServer, type Socket } from 'node:net';
import type { Api } from './cluster.js';

type Service = { spec: { clusterIP: string; ports: { name?: string; port: number }[] } };
type Slices = {
  items: {
    endpoints?: { addresses: string[]; conditions?: { ready?: boolean } }[];
    ports?: { name?: string; port?: number }[];
  }[];
};

export type ServiceProxy = { ip: string; port: number; stop(): Promise<void> };

export async function startServiceProxy(
  api: Api,
  namespace: string,
  name: string,
): Promise<ServiceProxy> {
  const svc = await api.must<Service>('GET', `/api/v1/namespaces/${namespace}/services/${name}`);
  const ip = svc.spec.clusterIP;
  const [first] = svc.spec.ports;
  if (!first) throw new Error(`service ${name} has no port`);
  const selector = encodeURIComponent(`kubernetes.io/service-name=${name}`);

  /** A ready endpoint's address and port; an endpoint without `ready` counts as ready (API docs). */
  const pick = async (): Promise<{ host: string; port: number } | undefined> => {
    const slices = await api.must<Slices>(
      'GET',
      `/apis/discovery.k8s.io/v1/namespaces/${namespace}/endpointslices?labelSelector=${selector}`,
    );
    for (const slice of slices.items) {
      const port = slice.ports?.find((p) => (p.name ?? '') === (first.name ?? ''))?.port;
      const ready = slice.endpoints?.find((e) => e.conditions?.ready !== false);
      if (port && ready?.addresses[0]) return { host: ready.addresses[0], port };
    }
    return undefined;
  };

  const sockets = new Set<Socket>();
  const server = createServer({ allowHalfOpen: true }, (client) => {
    sockets.add(client);
    client.once('close', () => sockets.delete(client));
    client.on('error', () => client.destroy());
    client.pause();
    pick().then(
      (to) => {
        if (!to) return client.resetAndDestroy();
        const upstream = connect({ ...to, localAddress: client.remoteAddress });
        sockets.add(upstream);
        upstream.once('close', () => sockets.delete(upstream));
        upstream.on('error', () => client.resetAndDestroy());
        client.on('error', () => upstream.destroy());
        upstream.once('connect', () => {
          client.pipe(upstream);
          upstream.pipe(client);
          client.resume();
        });
      },
      () => client.resetAndDestroy(),
    );
  });
  execFileSync('ip', ['addr', 'add', `${ip}/32`, 'dev', 'lo'], { stdio: 'pipe' });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(first.port, ip, resolve);
  });
  return {
    ip,
    port: first.port,
    async stop() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      execFileSync('ip', ['addr', 'del', `${ip}/32`, 'dev', 'lo'], { stdio: 'pipe' });
    },
  };
}
