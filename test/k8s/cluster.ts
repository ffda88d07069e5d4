// A real Kubernetes control plane on loopback for Slipway's Kubernetes runtime tests.
//
// startCluster() runs, from the binaries test/k8s/build.sh put in the cache:
//   etcd                      storage, on 127.0.0.1 (no fsync: a test cluster)
//   kube-apiserver            RBAC (+ Node) authorization, the default admission chain, service
//                             accounts signed by a generated key, a static admin token
//   kube-controller-manager   only the controllers a kubelet-less cluster needs: the garbage
//                             collector (claim → sandbox → pod deletion), namespace, serviceaccount
//                             (the "default" account pods need) and root-ca-cert-publisher;
//                             the EndpointSlice controller when a suite asks for it
//   agent-sandbox-controller  with --extensions (SandboxTemplate, SandboxWarmPool, SandboxClaim), as
//                             its own service account bound to upstream's ClusterRoles; its CRD
//                             conversion webhook served on 127.0.0.1 with a cert we sign
// and installs the agent-sandbox CRDs and the Gateway API standard CRDs.
//
// There is no kubelet and no scheduler: startTestNode() plays both for the pods it is shown (see
// below). Everything else answering on the API is the real thing.
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import {
  createWriteStream,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { request as httpsRequest } from 'node:https';
import { request as httpRequest } from 'node:http';
import { createServer, connect } from 'node:net';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { parseAllDocuments } from 'yaml';

export const cacheDir = process.env.SLIPWAY_K8S_CACHE ?? join(homedir(), '.cache', 'slipway-k8s');

/** A Kubernetes object as JSON; the harness only reads the few fields it needs. */
export type K8sObject = {
  apiVersion?: string;
  kind?: string;
  metadata?: {
    name?: string;
    namespace?: string;
    uid?: string;
    resourceVersion?: string;
    deletionTimestamp?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    ownerReferences?: { kind: string; name: string; uid: string }[];
  };
  spec?: Record<string, unknown>;
  status?: Record<string, unknown>;
  [key: string]: unknown;
};

export type ApiResponse<T = K8sObject> = { status: number; body: T };

/** Minimal REST client over the API server's TLS port, with a bearer token. */
export class Api {
  constructor(
    readonly server: string,
    readonly token: string,
    readonly ca: string,
  ) {}

  /** As another identity (e.g. a service account token): RBAC applies to it for real. */
  as(token: string): Api {
    return new Api(this.server, token, this.ca);
  }

  async request<T = K8sObject>(
    method: string,
    path: string,
    body?: unknown,
    contentType = 'application/json',
  ): Promise<ApiResponse<T>> {
    const res = await this.raw(method, path, body, contentType);
    const chunks: Buffer[] = [];
    for await (const c of res) chunks.push(c as Buffer);
    const text = Buffer.concat(chunks).toString('utf8');
    let parsed: unknown = text;
    try {
      parsed = JSON.parse(text);
    } catch {
      // not JSON (/readyz answers "ok"): keep the text
    }
    return { status: res.statusCode ?? 0, body: parsed as T };
  }

  get<T = K8sObject>(path: string) {
    return this.request<T>('GET', path);
  }
  post<T = K8sObject>(path: string, body: unknown) {
    return this.request<T>('POST', path, body);
  }
  delete<T = K8sObject>(path: string, body?: unknown) {
    return this.request<T>('DELETE', path, body);
  }
  /** JSON merge patch. */
  patch<T = K8sObject>(path: string, body: unknown) {
    return this.request<T>('PATCH', path, body, 'application/merge-patch+json');
  }

  /** Throws unless 2xx; returns the body. */
  async must<T = K8sObject>(
    method: string,
    path: string,
    body?: unknown,
    contentType?: string,
  ): Promise<T> {
    const res = await this.request<T>(method, path, body, contentType);
    if (res.status < 200 || res.status > 299) {
      throw new Error(
        `${method} ${path} → ${res.status}: ${JSON.stringify(res.body).slice(0, 600)}`,
      );
    }
    return res.body;
  }

  /** The response stream itself, for watches. */
  raw(
    method: string,
    path: string,
    body?: unknown,
    contentType = 'application/json',
    signal?: AbortSignal,
  ): Promise<import('node:http').IncomingMessage> {
    const url = new URL(path, this.server);
    const payload = body === undefined ? undefined : JSON.stringify(body);
    return new Promise((resolve, reject) => {
      const req = httpsRequest(
        url,
        {
          method,
          ca: this.ca,
          signal,
          headers: {
            authorization: `Bearer ${this.token}`,
            accept: 'application/json',
            ...(payload === undefined
              ? {}
              : { 'content-type': contentType, 'content-length': Buffer.byteLength(payload) }),
          },
        },
        resolve,
      );
      req.on('error', reject);
      req.end(payload);
    });
  }
}

export type Cluster = {
  dir: string;
  /** https://127.0.0.1:<port> */
  server: string;
  /** Admin bearer token (user "slipway-admin", group system:masters). */
  token: string;
  /** Path of an admin kubeconfig (server, CA, token). */
  kubeconfig: string;
  /** PEM of the cluster CA (serving certs are signed by it). */
  ca: string;
  api: Api;
  /** Milliseconds from startCluster() to each step, for reports. */
  timings: Record<string, number>;
  stop(): Promise<void>;
};

export type StartClusterOptions = {
  /** Working directory (PKI, etcd data, logs). Default: a new temp dir. */
  dir?: string;
  /** Build cache with bin/ and crds/ (default $SLIPWAY_K8S_CACHE or ~/.cache/slipway-k8s). */
  cache?: string;
  /** Also echo component logs to stderr. Default: only to <dir>/logs/. */
  verbose?: boolean;
  /**
   * Also run the EndpointSlice controller: Services with a selector get their pods' slices, which
   * follow each pod's Ready (what the egress test's service proxy routes by). Default: off.
   */
  endpointSlices?: boolean;
  /**
   * Also run the Deployment and ReplicaSet controllers: a Deployment (the chart's) gets its
   * ReplicaSet and pods, which a test node then runs. Default: off.
   */
  workloads?: boolean;
};

const BINARIES = ['etcd', 'kube-apiserver', 'kube-controller-manager', 'agent-sandbox-controller'];

/** Ports freePort handed out: once closed, the kernel may offer the same one again. */
const handedOut = new Set<number>();

/** A port free now and not handed out before in this process (two callers never share one). */
export async function freePort(): Promise<number> {
  for (;;) {
    const port = await unusedPort();
    if (handedOut.has(port)) continue;
    handedOut.add(port);
    return port;
  }
}

function unusedPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

function openssl(args: string[], cwd: string) {
  execFileSync('openssl', args, { cwd, stdio: ['ignore', 'ignore', 'pipe'] });
}

/** CA, API serving cert, webhook serving cert, service-account key pair: EC P-256, 2 days. */
function makePki(dir: string) {
  mkdirSync(dir, { recursive: true });
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '2'];
  openssl(
    ['req', '-x509', ...ec, '-keyout', 'ca.key', '-out', 'ca.crt', '-subj', '/CN=slipway-test-ca'],
    dir,
  );
  const leaf = (name: string, cn: string, san: string) =>
    openssl(
      [
        'req',
        '-x509',
        ...ec,
        '-CA',
        'ca.crt',
        '-CAkey',
        'ca.key',
        '-keyout',
        `${name}.key`,
        '-out',
        `${name}.crt`,
        '-subj',
        `/CN=${cn}`,
        '-addext',
        `subjectAltName=${san}`,
        '-addext',
        'extendedKeyUsage=serverAuth,clientAuth',
      ],
      dir,
    );
  leaf(
    'apiserver',
    'kube-apiserver',
    'IP:127.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,IP:10.96.0.1',
  );
  leaf('webhook', 'agent-sandbox-webhook', 'IP:127.0.0.1,DNS:localhost');
  openssl(
    ['genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256', '-out', 'sa.key'],
    dir,
  );
  openssl(['pkey', '-in', 'sa.key', '-pubout', '-out', 'sa.pub'], dir);
}

type Proc = { name: string; child: ChildProcess; exited: Promise<number | null> };

function startProc(
  name: string,
  bin: string,
  args: string[],
  logDir: string,
  verbose: boolean,
  env: Record<string, string> = {},
): Proc {
  const log = createWriteStream(join(logDir, `${name}.log`));
  const child = spawn(bin, args, {
    env: {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      HOME: process.env.HOME ?? '/',
      GOMAXPROCS: '2',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  for (const s of [child.stdout, child.stderr]) {
    s?.pipe(log, { end: false });
    if (verbose) s?.on('data', (d: Buffer) => process.stderr.write(`[${name}] ${d.toString()}`));
  }
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { name, child, exited };
}

async function stopProc(p: Proc, graceMs = 5000) {
  if (p.child.exitCode !== null || p.child.signalCode !== null) return;
  p.child.kill('SIGTERM');
  const t = setTimeout(() => p.child.kill('SIGKILL'), graceMs);
  await p.exited;
  clearTimeout(t);
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Polls check() until it returns a truthy value; fails with the last error after timeoutMs. */
export async function waitFor<T>(
  what: string,
  check: () => Promise<T | undefined | false | null>,
  timeoutMs = 30_000,
  everyMs = 100,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await check();
      if (v) return v;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) {
      throw new Error(
        `timed out after ${timeoutMs} ms waiting for ${what}${last ? `: ${String(last)}` : ''}`,
      );
    }
    await sleep(everyMs);
  }
}

function portOpen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect({ port, host: '127.0.0.1' });
    s.on('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.on('error', () => resolve(false));
  });
}

function httpOk(url: string): Promise<boolean> {
  return new Promise((resolve) => {
    const req = httpRequest(url, { timeout: 1000 }, (res) => {
      res.resume();
      resolve((res.statusCode ?? 500) < 400);
    });
    req.on('error', () => resolve(false));
    req.on('timeout', () => req.destroy());
    req.end();
  });
}

function yamlObjects(file: string): K8sObject[] {
  return parseAllDocuments(readFileSync(file, 'utf8'))
    .map((d) => d.toJS() as K8sObject | null)
    .filter((o): o is K8sObject => !!o && typeof o === 'object' && !!o.kind);
}

/** Where the harness creates each kind it applies from manifests ({ns}: the object's namespace). */
const KIND_PATHS: Record<string, string> = {
  CustomResourceDefinition: '/apis/apiextensions.k8s.io/v1/customresourcedefinitions',
  ValidatingAdmissionPolicy: '/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies',
  ValidatingAdmissionPolicyBinding:
    '/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings',
  Namespace: '/api/v1/namespaces',
  ServiceAccount: '/api/v1/namespaces/{ns}/serviceaccounts',
  ClusterRole: '/apis/rbac.authorization.k8s.io/v1/clusterroles',
  ClusterRoleBinding: '/apis/rbac.authorization.k8s.io/v1/clusterrolebindings',
  Role: '/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/roles',
  RoleBinding: '/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/rolebindings',
};

async function applyObject(api: Api, obj: K8sObject) {
  const base = KIND_PATHS[obj.kind ?? '']?.replace('{ns}', obj.metadata?.namespace ?? 'default');
  if (!base) throw new Error(`harness cannot apply kind ${obj.kind}`);
  const res = await api.post(base, obj);
  if (res.status === 409) return; // already there (a reused dir)
  if (res.status !== 201) {
    throw new Error(
      `create ${obj.kind} ${obj.metadata?.name} → ${res.status}: ${JSON.stringify(res.body).slice(0, 400)}`,
    );
  }
}

function kubeconfigYaml(server: string, ca: string, user: string, token: string) {
  return [
    'apiVersion: v1',
    'kind: Config',
    'clusters:',
    '- name: slipway-test',
    '  cluster:',
    `    server: ${server}`,
    `    certificate-authority-data: ${Buffer.from(ca).toString('base64')}`,
    'users:',
    `- name: ${user}`,
    '  user:',
    `    token: ${token}`,
    'contexts:',
    '- name: slipway-test',
    `  context: {cluster: slipway-test, user: ${user}}`,
    'current-context: slipway-test',
    '',
  ].join('\n');
}

/** Waits for each CRD to be Established (its API is served). */
async function waitEstablished(api: Api, names: string[]) {
  for (const name of names) {
    await waitFor(`CRD ${name} Established`, async () => {
      const crd = await api.must(
        'GET',
        `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${name}`,
      );
      const conds = (crd.status?.conditions ?? []) as { type: string; status: string }[];
      return conds.some((c) => c.type === 'Established' && c.status === 'True');
    });
  }
}

export async function startCluster(opts: StartClusterOptions = {}): Promise<Cluster> {
  const t0 = Date.now();
  const timings: Record<string, number> = {};
  const mark = (k: string) => (timings[k] = Date.now() - t0);
  const cache = opts.cache ?? cacheDir;
  const bin = (b: string) => join(cache, 'bin', b);
  const missing = BINARIES.filter((b) => !existsSync(bin(b)));
  if (missing.length) {
    throw new Error(`missing ${missing.join(', ')} in ${cache}/bin: run test/k8s/build.sh first`);
  }
  const dir = opts.dir ?? mkdtempSync(join(tmpdir(), 'slipway-k8s-'));
  // A temp dir we made is removed on stop() unless SLIPWAY_K8S_KEEP=1 (logs are in <dir>/logs).
  const removeDir = !opts.dir && process.env.SLIPWAY_K8S_KEEP !== '1';
  const pki = join(dir, 'pki');
  const logs = join(dir, 'logs');
  mkdirSync(logs, { recursive: true });
  const verbose = opts.verbose ?? process.env.SLIPWAY_K8S_VERBOSE === '1';
  const procs: Proc[] = [];
  const stop = async () => {
    for (const p of [...procs].reverse()) await stopProc(p);
    procs.length = 0;
    if (removeDir) rmSync(dir, { recursive: true, force: true });
  };

  try {
    makePki(pki);
    const ca = readFileSync(join(pki, 'ca.crt'), 'utf8');
    const token = randomBytes(24).toString('hex');
    writeFileSync(
      join(pki, 'tokens.csv'),
      `${token},slipway-admin,slipway-admin,"system:masters"\n`,
      {
        mode: 0o600,
      },
    );
    mark('pki');

    // etcd
    const ports = await Promise.all([1, 2, 3, 4, 5].map(() => freePort()));
    const [etcdClient, etcdPeer, apiPort, webhookPort, probePort] = ports as [
      number,
      number,
      number,
      number,
      number,
    ];
    const etcd = startProc(
      'etcd',
      bin('etcd'),
      [
        '--name=default',
        `--data-dir=${join(dir, 'etcd')}`,
        `--listen-client-urls=http://127.0.0.1:${etcdClient}`,
        `--advertise-client-urls=http://127.0.0.1:${etcdClient}`,
        `--listen-peer-urls=http://127.0.0.1:${etcdPeer}`,
        `--initial-advertise-peer-urls=http://127.0.0.1:${etcdPeer}`,
        `--initial-cluster=default=http://127.0.0.1:${etcdPeer}`,
        '--unsafe-no-fsync',
        '--log-level=warn',
      ],
      logs,
      verbose,
    );
    procs.push(etcd);
    await waitFor('etcd /health', () => httpOk(`http://127.0.0.1:${etcdClient}/health`), 30_000);
    mark('etcd');

    // kube-apiserver
    const server = `https://127.0.0.1:${apiPort}`;
    const apiserver = startProc(
      'kube-apiserver',
      bin('kube-apiserver'),
      [
        `--etcd-servers=http://127.0.0.1:${etcdClient}`,
        '--bind-address=127.0.0.1',
        '--advertise-address=127.0.0.1',
        `--secure-port=${apiPort}`,
        `--tls-cert-file=${join(pki, 'apiserver.crt')}`,
        `--tls-private-key-file=${join(pki, 'apiserver.key')}`,
        `--client-ca-file=${join(pki, 'ca.crt')}`,
        `--token-auth-file=${join(pki, 'tokens.csv')}`,
        '--authorization-mode=Node,RBAC',
        '--service-account-issuer=https://kubernetes.default.svc',
        `--service-account-key-file=${join(pki, 'sa.pub')}`,
        `--service-account-signing-key-file=${join(pki, 'sa.key')}`,
        '--service-cluster-ip-range=10.96.0.0/16',
        // The "kubernetes" Service's endpoints would name 127.0.0.1, which endpoint validation refuses.
        '--endpoint-reconciler-type=none',
        `--cert-dir=${join(dir, 'apiserver-certs')}`,
        '--profiling=false',
        '--v=1',
      ],
      logs,
      verbose,
    );
    procs.push(apiserver);
    const api = new Api(server, token, ca);
    await waitFor(
      'kube-apiserver /readyz',
      async () => {
        if (apiserver.child.exitCode !== null) {
          throw new Error(
            `kube-apiserver exited ${apiserver.child.exitCode}; see ${logs}/kube-apiserver.log`,
          );
        }
        return (await api.get('/readyz')).status === 200;
      },
      90_000,
      200,
    );
    mark('apiserver');

    const kubeconfig = join(dir, 'admin.kubeconfig');
    writeFileSync(kubeconfig, kubeconfigYaml(server, ca, 'slipway-admin', token), { mode: 0o600 });

    // CRDs. agent-sandbox's CRDs convert between v1alpha1 and v1beta1 through the controller's
    // webhook; the stock manifests name an in-cluster Service, which nothing routes here, so the
    // harness points them at the controller's webhook port on 127.0.0.1 with our CA.
    const webhookCaBundle = Buffer.from(ca).toString('base64');
    const crdNames: string[] = [];
    for (const group of ['agent-sandbox', 'gateway-api']) {
      const groupDir = join(cache, 'crds', group);
      for (const file of readdirSync(groupDir)
        .filter((f) => f.endsWith('.yaml'))
        .sort()) {
        for (const obj of yamlObjects(join(groupDir, file))) {
          if (obj.kind === 'CustomResourceDefinition') {
            crdNames.push(obj.metadata?.name ?? '');
            const conversion = obj.spec?.conversion as
              { strategy?: string; webhook?: { clientConfig?: unknown } } | undefined;
            if (conversion?.strategy === 'Webhook' && conversion.webhook) {
              conversion.webhook.clientConfig = {
                url: `https://127.0.0.1:${webhookPort}/convert`,
                caBundle: webhookCaBundle,
              };
            }
          }
          await applyObject(api, obj);
        }
      }
    }
    await waitEstablished(api, crdNames);
    mark('crds');

    // kube-controller-manager: garbage collection and the "default" service accounts.
    const kcm = startProc(
      'kube-controller-manager',
      bin('kube-controller-manager'),
      [
        `--kubeconfig=${kubeconfig}`,
        `--controllers=garbagecollector,namespace,serviceaccount,root-ca-cert-publisher${opts.endpointSlices ? ',endpointslice' : ''}${opts.workloads ? ',deployment,replicaset' : ''}`,
        '--leader-elect=false',
        '--secure-port=0',
        `--root-ca-file=${join(pki, 'ca.crt')}`,
        `--service-account-private-key-file=${join(pki, 'sa.key')}`,
        '--use-service-account-credentials=false',
        '--concurrent-gc-syncs=5',
        '--v=1',
      ],
      logs,
      verbose,
    );
    procs.push(kcm);
    await waitFor(
      'default service account (kube-controller-manager up)',
      async () => {
        if (kcm.child.exitCode !== null) {
          throw new Error(`kube-controller-manager exited ${kcm.child.exitCode}; see ${logs}`);
        }
        return (await api.get('/api/v1/namespaces/default/serviceaccounts/default')).status === 200;
      },
      60_000,
      200,
    );
    mark('controller-manager');

    // agent-sandbox controller with the extensions API (templates, warm pools, claims), as its own
    // service account with upstream's RBAC (ClusterRoles from its k8s/ manifests), so what it may
    // do here is what it may do in a real install.
    const manifests = join(cache, 'manifests', 'agent-sandbox');
    const rbacKinds = new Set([
      'Namespace',
      'ServiceAccount',
      'ClusterRole',
      'ClusterRoleBinding',
      'Role',
      'RoleBinding',
    ]);
    for (const file of readdirSync(manifests)
      .filter((f) => f.endsWith('.yaml'))
      .sort()) {
      for (const obj of yamlObjects(join(manifests, file))) {
        if (rbacKinds.has(obj.kind ?? '')) await applyObject(api, obj);
      }
    }
    const saToken = await api.must<{ status: { token: string } }>(
      'POST',
      '/api/v1/namespaces/agent-sandbox-system/serviceaccounts/agent-sandbox-controller/token',
      {
        apiVersion: 'authentication.k8s.io/v1',
        kind: 'TokenRequest',
        spec: { expirationSeconds: 48 * 3600 },
      },
    );
    const controllerKubeconfig = join(dir, 'agent-sandbox-controller.kubeconfig');
    writeFileSync(
      controllerKubeconfig,
      kubeconfigYaml(server, ca, 'agent-sandbox-controller', saToken.status.token),
      { mode: 0o600 },
    );
    const certDir = join(dir, 'webhook-certs');
    mkdirSync(certDir, { recursive: true });
    writeFileSync(join(certDir, 'tls.crt'), readFileSync(join(pki, 'webhook.crt')));
    writeFileSync(join(certDir, 'tls.key'), readFileSync(join(pki, 'webhook.key')), {
      mode: 0o600,
    });
    const controller = startProc(
      'agent-sandbox-controller',
      bin('agent-sandbox-controller'),
      [
        '--extensions',
        '--leader-elect=false',
        '--metrics-bind-address=0',
        `--health-probe-bind-address=127.0.0.1:${probePort}`,
        '--manage-webhook-certs=false',
        `--webhook-cert-dir=${certDir}`,
        `--webhook-port=${webhookPort}`,
      ],
      logs,
      verbose,
      { KUBECONFIG: controllerKubeconfig },
    );
    procs.push(controller);
    await waitFor(
      'agent-sandbox-controller ready (probe + webhook port)',
      async () => {
        if (controller.child.exitCode !== null) {
          throw new Error(
            `agent-sandbox-controller exited ${controller.child.exitCode}; see ${logs}`,
          );
        }
        return (
          (await httpOk(`http://127.0.0.1:${probePort}/readyz`)) && (await portOpen(webhookPort))
        );
      },
      60_000,
      200,
    );
    mark('agent-sandbox-controller');

    return { dir, server, token, kubeconfig, ca, api, timings, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

export { startTestNode } from './node.js';
export type { Pod, TestNode, TestNodeOptions, AgentProcess } from './node.js';
