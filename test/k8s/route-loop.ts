// A request loop through an app's pod route, as an ingress would go: read the app's EndpointSlice,
// then the pod it names. The adoption and leader suites keep it running across restarts and
// failovers of Slipway and count what failed.
import { fetchApp } from '../support/deploy.js';
import type { Cluster } from './cluster.js';

type Slice = { endpoints: { addresses: string[] }[]; ports: { port: number }[] };

/** The EndpointSlice of app `name`'s Service in `namespace`, if there is one. */
export async function appSlice(
  cluster: Cluster,
  namespace: string,
  name: string,
): Promise<Slice | undefined> {
  const selector = encodeURIComponent(`kubernetes.io/service-name=slipway-app-${name}`);
  const path = `/apis/discovery.k8s.io/v1/namespaces/${namespace}/endpointslices?labelSelector=${selector}`;
  return (await cluster.api.must<{ items: Slice[] }>('GET', path)).items[0];
}

/** `clients` loops asking app `name` at `host` through its pod route; each answer must be `text`. */
export function routeLoop(
  cluster: Cluster,
  namespace: string,
  opts: { name: string; host: string; text: string; clients: number },
) {
  const answers: { status: number; body: string }[] = [];
  let running = true;
  const client = async (): Promise<void> => {
    while (running) {
      const slice = await appSlice(cluster, namespace, opts.name).catch(() => undefined);
      const ip = slice?.endpoints[0]?.addresses[0];
      const answer = ip
        ? await fetchApp(`http://${opts.host}:${slice.ports[0]?.port}/`, { connectTo: ip }).catch(
            (err: unknown) => ({ status: 0, body: String(err) }),
          )
        : { status: -1, body: 'no route' };
      answers.push(answer);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  };
  const clients = Array.from({ length: opts.clients }, () => client());
  return {
    count: () => answers.length,
    async stop() {
      running = false;
      await Promise.all(clients);
      return {
        answers,
        failed: answers.filter((a) => a.status !== 200 || a.body !== opts.text),
      };
    },
  };
}
