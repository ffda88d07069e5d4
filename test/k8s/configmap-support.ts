import { KubeConfig } from '@kubernetes/client-node';
import { randomBytes } from 'node:crypto';
import { createServer, connect, type Socket } from 'node:net';
import type { Cluster } from './cluster.js';

/** A client config for the test cluster as `token` (default: the admin), through `server`. */
export function kubeConfigFor(
  cluster: Cluster,
  opts: { token?: string; server?: string } = {},
): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [
      {
        name: 'test',
        server: opts.server ?? cluster.server,
        caData: Buffer.from(cluster.ca).toString('base64'),
      },
    ],
    users: [{ name: 'user', token: opts.token ?? cluster.token }],
    contexts: [{ name: 'test', cluster: 'test', user: 'user' }],
    currentContext: 'test',
  });
  return kc;
}

/** A new, empty namespace: each store under test gets its own. */
export async function freshNamespace(cluster: Cluster, prefix = 'cm'): Promise<string> {
  const name = `${prefix}-${randomBytes(4).toString('hex')}`;
  await cluster.api.must('POST', '/api/v1/namespaces', { metadata: { name } });
  return name;
}

/** A ServiceAccount in `namespace` and a token for it: no rights until a Role is bound to it. */
export async function serviceAccountToken(
  cluster: Cluster,
  namespace: string,
  name: string,
): Promise<string> {
  await cluster.api.must('POST', `/api/v1/namespaces/${namespace}/serviceaccounts`, {
    metadata: { name },
  });
  const tr = await cluster.api.must<{ status: { token: string } }>(
    'POST',
    `/api/v1/namespaces/${namespace}/serviceaccounts/${name}/token`,
    { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec: {} },
  );
  return tr.status.token;
}

/** Binds a Role with `verbs` on configmaps in `namespace` to the service account `account`. */
export async function grantConfigMaps(
  cluster: Cluster,
  namespace: string,
  account: string,
  role: string,
  verbs: string[],
): Promise<void> {
  const rbac = `/apis/rbac.authorization.k8s.io/v1/namespaces/${namespace}`;
  await cluster.api.must('POST', `${rbac}/roles`, {
    metadata: { name: role },
    rules: [{ apiGroups: [''], resources: ['configmaps'], verbs }],
  });
  await cluster.api.must('POST', `${rbac}/rolebindings`, {
    metadata: { name: role },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: role },
    subjects: [{ kind: 'ServiceAccount', name: account, namespace }],
  });
}

/**
 * A TCP relay on loopback to the API server: cut it and the API server is unreachable for a
 * client configured with `server` (connections refused); hang it and connections are taken but
 * never answered; open it again (same port) and it is back. The API server itself keeps running
 * for the test's own checks.
 */
export interface Relay {
  server: string;
  cut(): Promise<void>;
  hang(): void;
  open(): Promise<void>;
}

/** `delayMs`: every answer (each chunk, in order) reaches the client that much later. */
export async function startRelay(
  cluster: Cluster,
  opts: { delayMs?: number } = {},
): Promise<Relay> {
  const target = new URL(cluster.server);
  const sockets = new Set<Socket>();
  let port = 0;
  let listener: ReturnType<typeof createServer> | undefined;
  let hanging = false;
  const track = (s: Socket): void => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
    s.on('error', () => s.destroy());
  };
  const dropAll = (): void => {
    for (const s of sockets) s.destroy();
  };
  const open = async (): Promise<void> => {
    if (listener) {
      hanging = false;
      dropAll();
      return;
    }
    const srv = createServer((client) => {
      track(client);
      if (hanging) return;
      const upstream = connect(Number(target.port), target.hostname);
      track(upstream);
      client.pipe(upstream);
      if (opts.delayMs === undefined) {
        upstream.pipe(client);
        return;
      }
      const later = (fn: () => void) => setTimeout(fn, opts.delayMs).unref();
      upstream.on('data', (chunk: Buffer) => later(() => client.write(chunk)));
      upstream.on('end', () => later(() => client.end()));
    });
    await new Promise<void>((resolve, reject) => {
      srv.once('error', reject);
      srv.listen(port, '127.0.0.1', resolve);
    });
    const address = srv.address();
    if (typeof address === 'object' && address) port = address.port;
    listener = srv;
  };
  await open();
  return {
    server: `https://127.0.0.1:${port}`,
    async cut() {
      const srv = listener;
      listener = undefined;
      dropAll();
      await new Promise<void>((resolve) => (srv ? srv.close(() => resolve()) : resolve()));
    },
    hang() {
      hanging = true;
      dropAll();
    },
    open,
  };
}
