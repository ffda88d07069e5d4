// The Helm chart (charts/slipway) against real parts: helm and kubeconform built from their Go
// modules (build.sh), kubeconform's schemas generated from the test cluster's OpenAPI, and
// install / upgrade / uninstall into the real API server (admission, RBAC, CRD validation).
// No control plane pod runs here (no test node: helm-install.k8s.ts runs one from its image); the
// agent-sandbox controller does, and fills the chart's warm pools with sandbox pods.
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/load.js';
import { leaderLeaseName } from '../../src/cluster/leadership.js';
import { requiredAccess, type ResourceAccess } from '../../src/cluster/required-access.js';
import { sandboxNetworkPolicy } from '../../src/cluster/sandbox-network-policy.js';
import { sandboxTemplate } from '../../src/runtime/kubernetes/sandbox-template.js';
import { chartSchemas } from './chart-schemas.js';
import { CHART, ciValueFiles, find, helm, kubeconform, mustHelm, render } from './chart-tools.js';
import { cacheDir, startCluster, waitFor, type Cluster, type K8sObject } from './cluster.js';

const NS = 'slipway';
let cluster: Cluster;
let home: string;
let schemaDir: string;
const numbers: Record<string, number | boolean> = {};

/** Every variant of the matrix: the default values and each ci/ value file. */
const variants = (): [string, string[]][] => [
  ['default', []],
  ...Object.entries(ciValueFiles()).map(([name, file]): [string, string[]] => [name, ['-f', file]]),
];

beforeAll(async () => {
  const t0 = Date.now();
  cluster = await startCluster();
  home = join(cluster.dir, 'helm');
  await cluster.api.must('POST', '/api/v1/namespaces', { metadata: { name: NS } });
  await waitFor(
    'default service account in the namespace',
    async () =>
      (await cluster.api.get(`/api/v1/namespaces/${NS}/serviceaccounts/default`)).status === 200,
  );
  numbers.clusterStartMs = Date.now() - t0;
});

afterAll(async () => {
  await cluster?.stop();
  console.log(JSON.stringify({ timings: cluster?.timings, ...numbers }, null, 2));
});

/** Slipway's config as the rendered ConfigMap holds it. */
const configIn = (objects: K8sObject[]) => {
  const cm = find(objects, 'ConfigMap') as K8sObject & { data: Record<string, string> };
  return parseConfig(parseYaml(cm.data['config.yaml'] as string));
};

/** What a pool name carries: sha256 of the template's spec as JSON (helm's toJson sorts keys). */
const specHash = (spec: unknown) =>
  createHash('sha256')
    .update(JSON.stringify(sortedKeys(spec)))
    .digest('hex')
    .slice(0, 10);
const sortedKeys = (v: unknown): unknown =>
  Array.isArray(v)
    ? v.map(sortedKeys)
    : typeof v === 'object' && v !== null
      ? Object.fromEntries(
          Object.keys(v)
            .sort()
            .map((k) => [k, sortedKeys((v as Record<string, unknown>)[k])]),
        )
      : v;

type RoleRule = {
  apiGroups: string[];
  resources: string[];
  verbs: string[];
  resourceNames?: string[];
};
/** `group/resource:verb`, and `@name` per object a rule is limited to. */
const asTriples = (rules: ResourceAccess[] | RoleRule[]) =>
  rules
    .flatMap((r) => {
      const names = (r.resourceNames ?? ['']).map((n) => (n ? `@${n}` : ''));
      return ('group' in r ? [r.group] : r.apiGroups).flatMap((g) =>
        ('group' in r ? [r.resource] : r.resources).flatMap((res) =>
          r.verbs.flatMap((v) => names.map((n) => `${g}/${res}:${v}${n}`)),
        ),
      );
    })
    .sort();

// First, before the ServiceMonitor CRD is installed below.
describe('prerequisites', () => {
  it('helm install refuses an optional ServiceMonitor when its CRD is not served, saying why', async () => {
    const res = await helm(
      home,
      ['install', 'slipway', CHART, '-n', NS, '--set', 'serviceMonitor.enabled=true'],
      cluster.kubeconfig,
    );
    expect(res.code).not.toBe(0);
    expect(res.stderr).toContain(
      "serviceMonitor.enabled needs the Prometheus Operator's CRDs (monitoring.coreos.com/v1 ServiceMonitor)",
    );
    // Nothing was created.
    const secrets = await cluster.api.must<{ items: K8sObject[] }>(
      'GET',
      `/api/v1/namespaces/${NS}/secrets?labelSelector=owner%3Dhelm`,
    );
    expect(secrets.items).toHaveLength(0);
  });
});

describe('rendering: helm lint, helm template, kubeconform', () => {
  beforeAll(async () => {
    const crd = parseYaml(
      readFileSync(
        join(cacheDir, 'crds', 'prometheus-operator', 'monitoring.coreos.com_servicemonitors.yaml'),
        'utf8',
      ),
    ) as K8sObject;
    await cluster.api.must('POST', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', crd);
    await waitFor('ServiceMonitor CRD served', async () => {
      const res = await cluster.api.get('/apis/monitoring.coreos.com/v1');
      return res.status === 200;
    });
    const schemas = await chartSchemas(cluster.api, [
      'monitoring.coreos.com/v1',
      'extensions.agents.x-k8s.io/v1beta1',
      'gateway.networking.k8s.io/v1',
    ]);
    schemaDir = schemas.dir;
    numbers.schemasMs = schemas.ms;
    numbers.schemasCached = schemas.cached;
  });

  it('lints --strict with the default values and with every ci value file', async () => {
    expect(Object.keys(ciValueFiles())).toEqual(
      ['configmap', 'ingress-routes', 'oidc', 'replicas', 's3', 'sqlite-pvc', 'tls-secret'].sort(),
    );
    for (const [name, args] of variants()) {
      const res = await helm(home, ['lint', '--strict', CHART, ...args]);
      expect(res.code, `${name}: ${res.stdout}${res.stderr}`).toBe(0);
      expect(res.stdout).toContain('1 chart(s) linted, 0 chart(s) failed');
    }
  });

  it('renders, for every variant, objects that kubeconform -strict validates, none skipped', async () => {
    for (const [name, args] of variants()) {
      const { text, objects } = await render(home, args);
      const report = await kubeconform(schemaDir, text);
      expect(report.code, `${name}: ${JSON.stringify(report.resources)}`).toBe(0);
      expect(report.summary, name).toEqual({
        valid: objects.length,
        invalid: 0,
        errors: 0,
        skipped: 0,
      });
      for (const kind of [
        'Deployment',
        'Service',
        'ServiceAccount',
        'Role',
        'RoleBinding',
        'ConfigMap',
        'NetworkPolicy',
      ]) {
        expect(
          objects.some((o) => o.kind === kind),
          `${name}: ${kind}`,
        ).toBe(true);
      }
      for (const kind of ['SandboxTemplate', 'SandboxWarmPool']) {
        expect(objects.filter((o) => o.kind === kind).length, `${name}: ${kind}`).toBe(3);
      }
    }
    const tls = await render(home, ['-f', ciValueFiles()['tls-secret'] as string]);
    expect(tls.objects.map((o) => o.kind)).toEqual(
      expect.arrayContaining(['Ingress', 'ServiceMonitor']),
    );
    const dflt = await render(home);
    expect(dflt.objects.map((o) => o.kind)).toEqual(
      expect.arrayContaining(['HTTPRoute', 'PersistentVolumeClaim', 'Secret']),
    );
  });

  it('renders one replica replaced with Recreate on SQLite, and two with a leader Lease and a PDB on the configmap store', async () => {
    const dflt = await render(home);
    const one = find(dflt.objects, 'Deployment') as K8sObject & {
      spec: { replicas: number; strategy: { type: string } };
    };
    expect(one.spec).toMatchObject({ replicas: 1, strategy: { type: 'Recreate' } });
    // One replica: a PDB could only block drains or protect nothing.
    expect(dflt.objects.some((o) => o.kind === 'PodDisruptionBudget')).toBe(false);
    const two = await render(home, ['-f', ciValueFiles().replicas as string]);
    const deployment = find(two.objects, 'Deployment') as K8sObject & {
      spec: { replicas: number; strategy: { type: string } };
    };
    expect(deployment.spec).toMatchObject({ replicas: 2, strategy: { type: 'RollingUpdate' } });
    expect(find(two.objects, 'PodDisruptionBudget').spec).toEqual({
      minAvailable: 1,
      selector: {
        matchLabels: {
          'app.kubernetes.io/name': 'slipway',
          'app.kubernetes.io/instance': 'slipway',
        },
      },
    });
    const cm = find(two.objects, 'ConfigMap') as K8sObject & { data: Record<string, string> };
    const config = parseConfig(parseYaml(cm.data['config.yaml'] as string));
    expect(config.runtime.kubernetes.leaderElection).toEqual({
      enabled: true,
      leaseSeconds: 10,
      renewSeconds: 2,
    });
    expect(config.runtime.kubernetes.instance).toBe('slipway');
  });

  it('kubeconform catches an unknown field and a wrong type (the schemas are strict)', async () => {
    const { objects } = await render(home);
    const deployment = structuredClone(find(objects, 'Deployment'));
    (deployment.spec as { replica?: number }).replica = 1;
    const unknown = await kubeconform(schemaDir, JSON.stringify(deployment));
    expect(unknown.summary.invalid).toBe(1);
    expect(unknown.resources?.[0]?.msg).toMatch(/replica/);
    const route = structuredClone(find(objects, 'HTTPRoute'));
    (route.spec as { hostnames: unknown }).hostnames = 'not-a-list';
    const wrongType = await kubeconform(schemaDir, JSON.stringify(route));
    expect(wrongType.summary.invalid).toBe(1);
  });

  it('renders per template the SandboxTemplate Slipway would write (no drift), a pool named for its hash and the config naming them', async () => {
    for (const [name, args] of variants()) {
      const { objects } = await render(home, args);
      const config = configIn(objects);
      const { runtime } = config;
      const pod = {
        image: runtime.kubernetes.image,
        command: runtime.kubernetes.command,
        memoryLimitMB: runtime.memoryLimitMB,
        cpu: runtime.cpu,
      };
      // The gate through the egress Service's service-link env vars, which the kubelet expands.
      const gate = '$(SLIPWAY_EGRESS_SERVICE_HOST):$(SLIPWAY_EGRESS_SERVICE_PORT)';
      const pools: Record<string, string> = {};
      for (const t of ['static', 'node', 'python']) {
        const template = find(objects, 'SandboxTemplate', `slipway-${t}`);
        expect(template.spec, `${name} ${t}`).toEqual(
          sandboxTemplate(t, pod, gate, { serviceLinks: true }).spec,
        );
        const pool = find(objects, 'SandboxWarmPool', `slipway-${t}-${specHash(template.spec)}`);
        expect(pool.spec, `${name} ${t}`).toEqual({
          replicas: runtime.poolSize,
          sandboxTemplateRef: { name: `slipway-${t}` },
        });
        pools[t] = pool.metadata?.name as string;
      }
      expect(runtime.kubernetes.sandboxObjects, name).toEqual({
        managedBy: 'chart',
        enrollSecret: 'slipway-sandbox-enroll',
        pools,
      });
      const secret = find(objects, 'Secret', 'slipway-sandbox-enroll') as K8sObject & {
        data: Record<string, string>;
      };
      expect(Object.keys(secret.data).sort(), name).toEqual(['node', 'python', 'static']);
      for (const value of Object.values(secret.data)) {
        expect(Buffer.from(value, 'base64').toString()).toMatch(/^[A-Za-z0-9]{48}$/);
      }
      const values =
        name === 'sqlite-pvc'
          ? { poolSize: 1, memory: '256Mi', cpu: '0.5' }
          : { poolSize: 2, memory: '512Mi', cpu: '1' };
      expect(runtime.poolSize, name).toBe(values.poolSize);
      expect(JSON.stringify(find(objects, 'SandboxTemplate').spec), name).toContain(
        `"limits":{"memory":"${values.memory}","cpu":"${values.cpu}"}`,
      );
    }
  });

  it('names its own egress Service and enroll Secret in the sandbox pods under another release name', async () => {
    const { objects } = await render(home, ['--set', 'fullnameOverride=team-a-slipway']);
    const runtime = configIn(objects).runtime;
    const spec = find(objects, 'SandboxTemplate', 'team-a-slipway-node').spec;
    const expected = sandboxTemplate(
      'node',
      {
        image: 'slipway/agent:0.1.0',
        command: runtime.kubernetes.command,
        memoryLimitMB: 512,
        cpu: 1,
      },
      '$(TEAM_A_SLIPWAY_EGRESS_SERVICE_HOST):$(TEAM_A_SLIPWAY_EGRESS_SERVICE_PORT)',
      { serviceLinks: true },
    ).spec;
    // The runtime's own writer names its fixed Secret; the chart's is named for the release.
    const text = JSON.stringify(expected).replace(
      '"name":"slipway-sandbox-enroll"',
      '"name":"team-a-slipway-sandbox-enroll"',
    );
    expect(spec).toEqual(JSON.parse(text));
    expect(find(objects, 'Service', 'team-a-slipway-egress')).toBeDefined();
    find(objects, 'Secret', 'team-a-slipway-sandbox-enroll');
    expect(runtime.kubernetes.sandboxObjects).toMatchObject({
      enrollSecret: 'team-a-slipway-sandbox-enroll',
      pools: { node: `team-a-slipway-node-${specHash(spec)}` },
    });
  });

  it('renames a pool when its template changes (a new image), not when only its size does', async () => {
    const poolNames = async (args: string[]) =>
      (await render(home, args)).objects
        .filter((o) => o.kind === 'SandboxWarmPool')
        .map((o) => o.metadata?.name)
        .sort();
    const before = await poolNames([]);
    expect(before).toHaveLength(3);
    expect(await poolNames(['--set', 'sandboxes.poolSize=5'])).toEqual(before);
    const renamed = await poolNames(['--set', 'sandboxes.image=slipway/agent:0.2.0']);
    expect(renamed).toHaveLength(3);
    for (const pool of renamed) expect(before).not.toContain(pool);
  });

  it('renders a config that Slipway itself accepts, with the values in it, for every variant', async () => {
    for (const [name, args] of variants()) {
      const { objects } = await render(home, args);
      const cm = find(objects, 'ConfigMap', 'slipway-config') as K8sObject & {
        data: Record<string, string>;
      };
      const config = parseConfig(parseYaml(cm.data['config.yaml'] as string));
      const egress = objects.find(
        (o) => o.kind === 'Service' && o.metadata?.name === 'slipway-egress',
      );
      expect(egress, name).toBeDefined();
      expect(config.runtime.backend, name).toBe('kubernetes');
      expect(config.runtime.kubernetes.networkPolicy.enabled, name).toBe(false);
      expect(config.runtime.kubernetes.egress).toMatchObject({
        listen: '0.0.0.0:3128',
        service: 'slipway-egress',
      });
      expect(config.runtime.kubernetes.routes.controlPlaneService).toEqual({
        name: 'slipway',
        port: 80,
      });
      expect(config.kubernetes.namespace).toBe(NS);
      expect(config.sources.backend).toBe('s3');
      expect(config.server.dataDir).toBe('/data');
    }
    const cfg = async (file: string) => {
      const { objects } = await render(home, ['-f', ciValueFiles()[file] as string]);
      const cm = find(objects, 'ConfigMap') as K8sObject & { data: Record<string, string> };
      return parseConfig(parseYaml(cm.data['config.yaml'] as string));
    };
    const pvc = await cfg('sqlite-pvc');
    expect(pvc.runtime).toMatchObject({ poolSize: 1, memoryLimitMB: 256, cpu: 0.5 });
    expect(pvc.runtime.egress.allowPrivate).toEqual(['10.1.2.3', 'internal-api.corp']);
    expect((await cfg('configmap')).store.backend).toBe('configmap');
    const oidc = await cfg('oidc');
    expect(oidc.auth).toMatchObject({ mode: 'oidc', identityCacheTTL: '10s' });
    expect(oidc.auth.oidc).toMatchObject({
      issuer: 'https://idp.example.com/realms/main',
      adminRole: 'platform-admin',
    });
    expect(oidc.server.logLevel).toBe('debug');
    const s3 = await cfg('s3');
    expect(s3.sources.s3).toMatchObject({
      endpoint: 'http://minio.storage.svc:9000',
      prefix: 'slipway/sources/',
      forcePathStyle: true,
      presignExpiry: '2m',
    });
    expect((await cfg('tls-secret')).auth.tls).toMatchObject({
      enabled: true,
      certFile: '/etc/slipway/tls/tls.crt',
    });
    expect((await cfg('ingress-routes')).runtime.kubernetes.routes).toMatchObject({
      kind: 'ingress',
      ingressClassName: 'nginx',
    });
  });

  it('grants in its Role exactly the access Slipway checks for, for every variant', async () => {
    for (const [name, args] of variants()) {
      const { objects } = await render(home, args);
      const cm = find(objects, 'ConfigMap') as K8sObject & { data: Record<string, string> };
      const config = parseConfig(parseYaml(cm.data['config.yaml'] as string));
      const role = find(objects, 'Role') as K8sObject & { rules: RoleRule[] };
      const needs = {
        routeKind: config.runtime.kubernetes.routes.kind,
        configMapStore: config.store.backend === 'configmap',
        networkPolicy: config.runtime.kubernetes.networkPolicy.enabled,
        sandboxObjects: config.runtime.kubernetes.sandboxObjects.managedBy,
        enrollSecret: config.runtime.kubernetes.sandboxObjects.enrollSecret,
        ...(config.runtime.kubernetes.leaderElection.enabled
          ? { leaderLease: leaderLeaseName(config.runtime.kubernetes.instance ?? '') }
          : {}),
      };
      expect(needs.sandboxObjects, name).toBe('chart');
      expect(asTriples(role.rules), name).toEqual(asTriples(requiredAccess(needs)));
    }
  });

  it('renders the sandbox NetworkPolicy the runtime would write', async () => {
    for (const [name, args] of variants()) {
      const { objects } = await render(home, args);
      const policy = find(objects, 'NetworkPolicy');
      const ns = (
        policy.spec?.ingress as {
          from: { namespaceSelector?: { matchLabels: Record<string, string> } }[];
        }[]
      )
        .flatMap((r) => r.from)
        .find((f) => f.namespaceSelector)?.namespaceSelector?.matchLabels[
        'kubernetes.io/metadata.name'
      ];
      const expected = sandboxNetworkPolicy(NS, {
        sandboxSelector: { 'slipway.dev/sandbox': 'true' },
        controlPlaneSelector: {
          'app.kubernetes.io/name': 'slipway',
          'app.kubernetes.io/instance': 'slipway',
        },
        egressGatePort: 3128,
        agentPort: 9090,
        appPort: 8080,
        ...(ns
          ? {
              ingressFrom: [
                { namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': ns } } },
              ],
            }
          : {}),
      });
      expect(policy.spec, name).toEqual(expected.spec);
      const ingressNamespace =
        name === 'configmap'
          ? undefined
          : name === 'tls-secret' || name === 'ingress-routes'
            ? 'ingress-nginx'
            : 'gateway-system';
      expect(ns, name).toBe(ingressNamespace);
    }
  });

  it('hardens the control plane pod: non-root, read-only root, RuntimeDefault, no capabilities, probes', async () => {
    for (const [name, args] of variants()) {
      const { objects } = await render(home, args);
      const deployment = find(objects, 'Deployment') as K8sObject & {
        spec: { template: { spec: PodSpec }; strategy: { type: string } };
      };
      const pod = deployment.spec.template.spec;
      const c = pod.containers[0] as Container;
      expect(pod.securityContext).toMatchObject({
        runAsNonRoot: true,
        runAsUser: 65532,
        seccompProfile: { type: 'RuntimeDefault' },
      });
      expect(c.securityContext).toEqual({
        allowPrivilegeEscalation: false,
        readOnlyRootFilesystem: true,
        runAsNonRoot: true,
        capabilities: { drop: ['ALL'] },
      });
      expect(c.livenessProbe.httpGet.path).toBe('/healthz');
      expect(c.readinessProbe.httpGet.path).toBe('/readyz');
      const scheme = name === 'tls-secret' ? 'HTTPS' : 'HTTP';
      expect([c.livenessProbe.httpGet.scheme, c.readinessProbe.httpGet.scheme]).toEqual([
        scheme,
        scheme,
      ]);
      expect(c.resources.limits).toMatchObject({ memory: '1Gi' });
      expect(c.volumeMounts.map((m) => m.mountPath)).toEqual(
        expect.arrayContaining(['/data', '/tmp']),
      );
      const sqlitePvc =
        name === 'default' ||
        name === 'sqlite-pvc' ||
        name === 'tls-secret' ||
        name === 's3' ||
        name === 'oidc';
      expect(deployment.spec.strategy.type, name).toBe(sqlitePvc ? 'Recreate' : 'RollingUpdate');
      const envNames = (c.env ?? []).map((e) => e.name);
      expect(envNames.includes('SVC_AUTH_API_KEY'), name).toBe(name !== 'oidc');
      expect(envNames.includes('AWS_SECRET_ACCESS_KEY'), name).toBe(name === 's3');
      // Secrets reach the pod by reference only: no value in the rendered env.
      expect((c.env ?? []).filter((e) => e.value !== undefined).map((e) => e.name)).toEqual([
        'SVC_CONFIG',
      ]);
    }
  });

  it('refuses bad values at install with a message naming the value', async () => {
    const bad: [string[], RegExp][] = [
      [['--set', 'sandboxes.poolSize=-1'], /\/sandboxes\/poolSize': minimum/],
      [['--set', 'store.backend=postgres'], /\/store\/backend': value must be one of/],
      [['--set', 'auth.mode=oidc'], /\/auth\/oidc\/issuer': minLength/],
      [['--set', 'routes.kind=ingress'], /\/routes\/ingressClassName': minLength/],
      [['--set', 'config.runtime.backend=local'], /\/config\/runtime\/backend'/],
      [['--set', 'sources.s3.bucket=Not_A_Bucket'], /\/sources\/s3\/bucket'/],
      // Two replicas on SQLite's ReadWriteOnce volume (or in memory) cannot share the records.
      [['--set', 'replicaCount=2'], /\/store\/backend': value must be 'configmap'/],
      [
        ['--set', 'replicaCount=2', '--set', 'store.backend=memory'],
        /\/store\/backend': value must be 'configmap'/,
      ],
    ];
    for (const [args, message] of bad) {
      const res = await helm(
        home,
        ['install', 'slipway', CHART, '-n', NS, ...args],
        cluster.kubeconfig,
      );
      expect(res.code, args.join(' ')).not.toBe(0);
      expect(res.stderr).toContain("values don't meet the specifications of the schema(s)");
      expect(res.stderr).toMatch(message);
    }
  });
});

describe('install, upgrade and uninstall in the test cluster', () => {
  const LABEL = 'app.kubernetes.io%2Finstance%3Dslipway';
  const EXT = '/apis/extensions.agents.x-k8s.io/v1beta1/namespaces/slipway';
  /** The namespaced objects of the release, by kind, as the API lists them. */
  const KINDS: [string, string][] = [
    ['ConfigMap', '/api/v1/namespaces/slipway/configmaps'],
    ['Secret', '/api/v1/namespaces/slipway/secrets'],
    ['Service', '/api/v1/namespaces/slipway/services'],
    ['ServiceAccount', '/api/v1/namespaces/slipway/serviceaccounts'],
    ['PersistentVolumeClaim', '/api/v1/namespaces/slipway/persistentvolumeclaims'],
    ['Deployment', '/apis/apps/v1/namespaces/slipway/deployments'],
    ['Role', '/apis/rbac.authorization.k8s.io/v1/namespaces/slipway/roles'],
    ['RoleBinding', '/apis/rbac.authorization.k8s.io/v1/namespaces/slipway/rolebindings'],
    ['NetworkPolicy', '/apis/networking.k8s.io/v1/namespaces/slipway/networkpolicies'],
    ['Ingress', '/apis/networking.k8s.io/v1/namespaces/slipway/ingresses'],
    ['PodDisruptionBudget', '/apis/policy/v1/namespaces/slipway/poddisruptionbudgets'],
    ['HTTPRoute', '/apis/gateway.networking.k8s.io/v1/namespaces/slipway/httproutes'],
    ['ServiceMonitor', '/apis/monitoring.coreos.com/v1/namespaces/slipway/servicemonitors'],
    ['SandboxTemplate', `${EXT}/sandboxtemplates`],
    ['SandboxWarmPool', `${EXT}/sandboxwarmpools`],
  ];
  const listed = async () => {
    const out: string[] = [];
    for (const [kind, path] of KINDS) {
      const list = await cluster.api.must<{ items: K8sObject[] }>(
        'GET',
        `${path}?labelSelector=${LABEL}`,
      );
      out.push(...list.items.map((o) => `${kind}/${o.metadata?.name}`));
    }
    return out.sort();
  };
  // helm runs as a namespace admin (INSTALLER_RULES), not as a cluster admin.
  let installerKubeconfig: string;
  const asInstaller = (args: string[]) => mustHelm(home, args, installerKubeconfig);
  beforeAll(async () => {
    installerKubeconfig = await namespaceInstaller(NS, INSTALLER_RULES);
  });

  it('is refused by RBAC for an installer who does not hold what the Role grants (no escalation)', async () => {
    const ns = 'escalation';
    await cluster.api.must('POST', '/api/v1/namespaces', { metadata: { name: ns } });
    // It may write the chart's own templates and pools, but not the claims the Role grants.
    const narrow = await namespaceInstaller(ns, [
      ...INSTALLER_RULES.filter((r) => r.apiGroups[0] !== 'extensions.agents.x-k8s.io'),
      all('extensions.agents.x-k8s.io', ['sandboxtemplates', 'sandboxwarmpools']),
    ]);
    const res = await helm(home, ['install', 'slipway', CHART, '-n', ns], narrow);
    expect(res.code).not.toBe(0);
    expect(res.stderr).toMatch(/attempting to grant RBAC permissions not currently held/);
    expect(res.stderr).toMatch(/extensions.agents.x-k8s.io.*sandboxclaims/);
    const roles = await cluster.api.must<{ items: K8sObject[] }>(
      'GET',
      `/apis/rbac.authorization.k8s.io/v1/namespaces/${ns}/roles`,
    );
    expect(roles.items.map((r) => r.metadata?.name)).toEqual(['installer']);
  });
  const sa = async () => {
    const res = await cluster.api.must<{ status: { token: string } }>(
      'POST',
      `/api/v1/namespaces/${NS}/serviceaccounts/slipway/token`,
      {
        apiVersion: 'authentication.k8s.io/v1',
        kind: 'TokenRequest',
        spec: { expirationSeconds: 600 },
      },
    );
    return cluster.api.as(res.status.token);
  };
  type Ask = { verb: string; group: string; resource: string; namespace?: string; name?: string };
  const allowed = async (api: Cluster['api'], ask: Ask) => {
    const review = await api.must<{ status: { allowed: boolean } }>(
      'POST',
      '/apis/authorization.k8s.io/v1/selfsubjectaccessreviews',
      {
        apiVersion: 'authorization.k8s.io/v1',
        kind: 'SelfSubjectAccessReview',
        spec: {
          resourceAttributes: {
            namespace: ask.namespace ?? NS,
            verb: ask.verb,
            group: ask.group,
            resource: ask.resource,
            ...(ask.name ? { name: ask.name } : {}),
          },
        },
      },
    );
    return review.status.allowed;
  };
  const enrollKeys = async () =>
    (
      await cluster.api.must<{ data: Record<string, string> }>(
        'GET',
        `/api/v1/namespaces/${NS}/secrets/slipway-sandbox-enroll`,
      )
    ).data;
  const poolsNow = async () => {
    const { pools } = (await configOf()).runtime.kubernetes.sandboxObjects;
    if (!pools) throw new Error('the installed config names no pools');
    return pools;
  };
  const sandboxPods = async () =>
    (
      await cluster.api.must<{ items: PoolPod[] }>(
        'GET',
        `/api/v1/namespaces/${NS}/pods?labelSelector=slipway.dev%2Fsandbox%3Dtrue`,
      )
    ).items;
  const configOf = async () => {
    const cm = await cluster.api.must<K8sObject & { data: Record<string, string> }>(
      'GET',
      `/api/v1/namespaces/${NS}/configmaps/slipway-config`,
    );
    return parseConfig(parseYaml(cm.data['config.yaml'] as string));
  };
  const deployment = () =>
    cluster.api.must<
      K8sObject & {
        metadata: { generation: number };
        spec: {
          strategy: { type: string };
          template: { metadata: { annotations: Record<string, string> } };
        };
      }
    >('GET', `/apis/apps/v1/namespaces/${NS}/deployments/slipway`);

  it('installs: every object is accepted by the API server, and NOTES say how to get the first key', async () => {
    await cluster.api.must('POST', `/api/v1/namespaces/${NS}/secrets`, {
      metadata: { name: 'slipway-s3' },
      stringData: { AWS_ACCESS_KEY_ID: 'test-access', AWS_SECRET_ACCESS_KEY: 'test-secret' },
    });
    const t0 = Date.now();
    const out = await asInstaller([
      'install',
      'slipway',
      CHART,
      '-n',
      NS,
      '--set',
      'sources.s3.existingSecret=slipway-s3',
      '--set',
      'serviceMonitor.enabled=true',
    ]);
    numbers.helmInstallMs = Date.now() - t0;
    expect(out).toContain('STATUS: deployed');
    expect(out).toContain(
      "kubectl -n slipway get secret slipway-api-key -o jsonpath='{.data.api-key}' | base64 -d",
    );
    expect(out).toContain(
      'this release holds the SandboxTemplates slipway-static, slipway-node, slipway-python',
    );
    expect(out).toContain(
      'kubectl -n slipway delete sandboxclaims,services,endpointslices,httproutes -l app.kubernetes.io/managed-by=slipway',
    );
    const pools = await poolsNow();
    expect(Object.keys(pools).sort()).toEqual(['node', 'python', 'static']);
    const manifest = await asInstaller(['get', 'manifest', 'slipway', '-n', NS]);
    const rendered = manifest
      .split(/^---$/m)
      .map((d) => parseYaml(d) as K8sObject | null)
      .filter((o): o is K8sObject => o !== null)
      .map((o) => `${o.kind}/${o.metadata?.name}`)
      .sort();
    expect(rendered).toEqual(
      [
        'ConfigMap/slipway-config',
        'Deployment/slipway',
        'HTTPRoute/slipway',
        'NetworkPolicy/slipway-sandboxes',
        'PersistentVolumeClaim/slipway-data',
        'Role/slipway',
        'RoleBinding/slipway',
        'Secret/slipway-api-key',
        'Service/slipway',
        'Service/slipway-egress',
        'ServiceAccount/slipway',
        'ServiceMonitor/slipway',
        'Secret/slipway-sandbox-enroll',
        ...['static', 'node', 'python'].map((t) => `SandboxTemplate/slipway-${t}`),
        ...Object.values(pools).map((p) => `SandboxWarmPool/${p}`),
      ].sort(),
    );
    expect(await listed()).toEqual(rendered);
    // The pools are real: agent-sandbox's controller makes their sandboxes' pods from the
    // templates, and the API server accepts those pod specs.
    const pods = await waitFor('the warm pools pods, 2 per template', async () => {
      const list = await sandboxPods();
      return list.length === 6 ? list : undefined;
    });
    for (const pod of pods) {
      expect(pod.spec.enableServiceLinks).toBe(true);
      expect(pod.spec.containers[0]?.env).toContainEqual({
        name: 'SLIPWAY_EGRESS_GATE',
        value: '$(SLIPWAY_EGRESS_SERVICE_HOST):$(SLIPWAY_EGRESS_SERVICE_PORT)',
      });
    }
    const enroll = await enrollKeys();
    expect(Object.keys(enroll).sort()).toEqual(['node', 'python', 'static']);
    for (const value of Object.values(enroll)) {
      expect(Buffer.from(value, 'base64').toString()).toMatch(/^[A-Za-z0-9]{48}$/);
    }
    const key = await cluster.api.must<{ data: Record<string, string> }>(
      'GET',
      `/api/v1/namespaces/${NS}/secrets/slipway-api-key`,
    );
    expect(Buffer.from(key.data['api-key'] as string, 'base64').toString()).toMatch(
      /^[A-Za-z0-9]{40}$/,
    );
    // The egress gate's Service has the ClusterIP Slipway writes into the sandbox pods' env.
    const egress = await cluster.api.must<{ spec: { clusterIP: string } }>(
      'GET',
      `/api/v1/namespaces/${NS}/services/slipway-egress`,
    );
    expect(egress.spec.clusterIP).toMatch(/^\d+\.\d+\.\d+\.\d+$/);
  });

  it('gives the service account exactly what Slipway uses, and not more', async () => {
    const api = await sa();
    const needs = {
      routeKind: 'httproute',
      configMapStore: false,
      networkPolicy: false,
      sandboxObjects: 'chart',
    } as const;
    for (const r of requiredAccess(needs)) {
      for (const verb of r.verbs) {
        for (const name of r.resourceNames ?? [undefined]) {
          expect(
            await allowed(api, { verb, group: r.group, resource: r.resource, name }),
            `${verb} ${r.resource} ${name ?? ''}`,
          ).toBe(true);
        }
      }
    }
    const denied: Ask[] = [
      { verb: 'delete', group: '', resource: 'pods' },
      { verb: 'create', group: '', resource: 'pods' },
      { verb: 'get', group: '', resource: 'secrets', namespace: 'kube-system' },
      { verb: 'list', group: '', resource: 'secrets' },
      // The enroll Secret only: not the API key (nor S3 credentials or a TLS key) beside it.
      { verb: 'get', group: '', resource: 'secrets', name: 'slipway-api-key' },
      { verb: 'get', group: '', resource: 'secrets' },
      {
        verb: 'create',
        group: 'rbac.authorization.k8s.io',
        resource: 'clusterroles',
        namespace: '',
      },
      { verb: 'create', group: 'rbac.authorization.k8s.io', resource: 'rolebindings' },
      { verb: 'list', group: '', resource: 'nodes', namespace: '' },
      { verb: 'create', group: 'networking.k8s.io', resource: 'networkpolicies' },
      { verb: 'list', group: '', resource: 'configmaps' },
      { verb: 'create', group: 'agents.x-k8s.io', resource: 'sandboxes' },
      // The release owns the templates, the pools and the enroll Secret: Slipway writes none.
      { verb: 'delete', group: 'extensions.agents.x-k8s.io', resource: 'sandboxtemplates' },
      { verb: 'create', group: 'extensions.agents.x-k8s.io', resource: 'sandboxtemplates' },
      { verb: 'update', group: 'extensions.agents.x-k8s.io', resource: 'sandboxtemplates' },
      { verb: 'create', group: 'extensions.agents.x-k8s.io', resource: 'sandboxwarmpools' },
      { verb: 'delete', group: 'extensions.agents.x-k8s.io', resource: 'sandboxwarmpools' },
      { verb: 'create', group: '', resource: 'secrets' },
      { verb: 'update', group: '', resource: 'secrets' },
      { verb: 'list', group: 'networking.k8s.io', resource: 'ingresses' },
      {
        verb: 'create',
        group: 'extensions.agents.x-k8s.io',
        resource: 'sandboxclaims',
        namespace: 'default',
      },
    ];
    for (const ask of denied) {
      expect(await allowed(api, ask), `${ask.verb} ${ask.resource} in ${ask.namespace ?? NS}`).toBe(
        false,
      );
    }
    // Real calls as the account, not only reviews.
    expect(
      (await api.get(`/apis/extensions.agents.x-k8s.io/v1beta1/namespaces/${NS}/sandboxwarmpools`))
        .status,
    ).toBe(200);
    // Pods are read (EndpointSlices follow them), never written.
    expect((await api.get(`/api/v1/namespaces/${NS}/pods`)).status).toBe(200);
    expect((await api.request('DELETE', `/api/v1/namespaces/${NS}/pods/any`)).status).toBe(403);
    // The enroll Secret, and no other: not the API key beside it, not a list of them all.
    const secrets = `/api/v1/namespaces/${NS}/secrets`;
    expect((await api.get(`${secrets}/slipway-sandbox-enroll`)).status).toBe(200);
    expect((await api.get(`${secrets}/slipway-api-key`)).status).toBe(403);
    expect((await api.get(secrets)).status).toBe(403);
  });

  it('upgrades with changed values: the ConfigMap changes, the Deployment rolls, the Role follows the store, a new image gets new pools', async () => {
    const before = await deployment();
    const poolsBefore = await poolsNow();
    const enrollBefore = await enrollKeys();
    const keyBefore = await cluster.api.must<{ data: Record<string, string> }>(
      'GET',
      `/api/v1/namespaces/${NS}/secrets/slipway-api-key`,
    );
    await asInstaller([
      'upgrade',
      'slipway',
      CHART,
      '-n',
      NS,
      '--reuse-values',
      '--set',
      'sandboxes.poolSize=3',
      '--set',
      'sandboxes.image=slipway/agent:0.2.0',
      '--set',
      'store.backend=configmap',
    ]);
    const config = await configOf();
    expect(config.runtime.poolSize).toBe(3);
    expect(config.runtime.kubernetes.image).toBe('slipway/agent:0.2.0');
    expect(config.store.backend).toBe('configmap');
    const after = await deployment();
    expect(after.metadata.generation).toBe(before.metadata.generation + 1);
    expect(after.spec.template.metadata.annotations['checksum/config']).not.toBe(
      before.spec.template.metadata.annotations['checksum/config'],
    );
    expect([before.spec.strategy.type, after.spec.strategy.type]).toEqual([
      'Recreate',
      'RollingUpdate',
    ]);
    // The generated API key survives the upgrade.
    const keyAfter = await cluster.api.must<{ data: Record<string, string> }>(
      'GET',
      `/api/v1/namespaces/${NS}/secrets/slipway-api-key`,
    );
    expect(keyAfter.data['api-key']).toBe(keyBefore.data['api-key']);
    // So do the enroll keys; the new image made new pools, and Helm deleted the old ones.
    expect(await enrollKeys()).toEqual(enrollBefore);
    const poolsAfter = await poolsNow();
    for (const t of ['static', 'node', 'python'] as const) {
      expect(poolsAfter[t], t).toMatch(new RegExp(`^slipway-${t}-[0-9a-f]{10}$`));
      expect(poolsAfter[t], t).not.toBe(poolsBefore[t]);
    }
    const warmPools = await cluster.api.must<{
      items: (K8sObject & { spec: { replicas: number } })[];
    }>('GET', `/apis/extensions.agents.x-k8s.io/v1beta1/namespaces/${NS}/sandboxwarmpools`);
    expect(warmPools.items.map((p) => [p.metadata?.name, p.spec.replicas]).sort()).toEqual(
      Object.values(poolsAfter)
        .map((p) => [p, 3])
        .sort(),
    );
    const template = await cluster.api.must<
      K8sObject & { spec: { podTemplate: { spec: PodTemplateSpec } } }
    >(
      'GET',
      `/apis/extensions.agents.x-k8s.io/v1beta1/namespaces/${NS}/sandboxtemplates/slipway-node`,
    );
    expect(template.spec.podTemplate.spec.containers[0]?.image).toBe('slipway/agent:0.2.0');
    // Fresh warm pods: the old pools' pods go with them, the new pools' pods run the new image.
    await waitFor('only the new pools pods, 3 per template', async () => {
      const images = (await sandboxPods()).map((p) => p.spec.containers[0]?.image);
      return images.length === 9 && images.every((i) => i === 'slipway/agent:0.2.0');
    });
    const api = await sa();
    for (const verb of ['get', 'list', 'watch', 'create', 'update', 'delete']) {
      expect(await allowed(api, { verb, group: '', resource: 'configmaps' }), verb).toBe(true);
    }
    // The PVC is no longer rendered, and kept (helm.sh/resource-policy: keep).
    const objects = await listed();
    expect(objects).toContain('PersistentVolumeClaim/slipway-data');
  });

  it('uninstalls leaving only the kept PVC (and nothing of helm): templates, pools, the enroll Secret and the warm pods go', async () => {
    await asInstaller(['uninstall', 'slipway', '-n', NS, '--wait']);
    expect(await listed()).toEqual(['PersistentVolumeClaim/slipway-data']);
    for (const kind of ['sandboxtemplates', 'sandboxwarmpools']) {
      const left = await cluster.api.must<{ items: K8sObject[] }>(
        'GET',
        `/apis/extensions.agents.x-k8s.io/v1beta1/namespaces/${NS}/${kind}`,
      );
      expect(left.items, kind).toEqual([]);
    }
    await waitFor('the warm pods gone', async () => (await sandboxPods()).length === 0);
    const helmRecords = await cluster.api.must<{ items: K8sObject[] }>(
      'GET',
      `/api/v1/namespaces/${NS}/secrets?labelSelector=owner%3Dhelm`,
    );
    expect(helmRecords.items).toHaveLength(0);
    const secrets = await cluster.api.must<{ items: K8sObject[] }>(
      'GET',
      `/api/v1/namespaces/${NS}/secrets`,
    );
    expect(secrets.items.map((s) => s.metadata?.name)).toEqual(['slipway-s3']);
  });
});

const all = (group: string, resources: string[]) => ({
  apiGroups: [group],
  resources,
  verbs: ['*'],
});
/**
 * A namespace admin's rights: every verb on the kinds the chart renders and on the custom
 * resources its Role lets Slipway use (RBAC refuses a Role granting what its writer does not
 * hold); nothing cluster-wide, no escalate or bind. (The test cluster runs no aggregation
 * controller, so the stock `admin` ClusterRole is empty.)
 */
const INSTALLER_RULES = [
  all('', ['configmaps', 'secrets', 'services', 'serviceaccounts', 'persistentvolumeclaims']),
  // Reads pods, as a namespace admin does: the Role grants Slipway pods list, watch.
  { apiGroups: [''], resources: ['pods'], verbs: ['get', 'list', 'watch'] },
  all('apps', ['deployments']),
  // Not '*': that would include escalate and bind, which skip RBAC's escalation check.
  {
    apiGroups: ['rbac.authorization.k8s.io'],
    resources: ['roles', 'rolebindings'],
    verbs: ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete'],
  },
  all('networking.k8s.io', ['networkpolicies', 'ingresses']),
  all('policy', ['poddisruptionbudgets']),
  all('discovery.k8s.io', ['endpointslices']),
  all('coordination.k8s.io', ['leases']),
  all('extensions.agents.x-k8s.io', ['sandboxtemplates', 'sandboxwarmpools', 'sandboxclaims']),
  all('gateway.networking.k8s.io', ['httproutes']),
  all('monitoring.coreos.com', ['servicemonitors']),
];

/** A ServiceAccount `installer` in `ns` holding `rules` there; returns a kubeconfig for it. */
async function namespaceInstaller(ns: string, rules: typeof INSTALLER_RULES): Promise<string> {
  const rbac = `/apis/rbac.authorization.k8s.io/v1/namespaces/${ns}`;
  await cluster.api.must('POST', `/api/v1/namespaces/${ns}/serviceaccounts`, {
    metadata: { name: 'installer' },
  });
  await cluster.api.must('POST', `${rbac}/roles`, { metadata: { name: 'installer' }, rules });
  await cluster.api.must('POST', `${rbac}/rolebindings`, {
    metadata: { name: 'installer' },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'installer' },
    subjects: [{ kind: 'ServiceAccount', name: 'installer', namespace: ns }],
  });
  const token = await cluster.api.must<{ status: { token: string } }>(
    'POST',
    `/api/v1/namespaces/${ns}/serviceaccounts/installer/token`,
    {
      apiVersion: 'authentication.k8s.io/v1',
      kind: 'TokenRequest',
      spec: { expirationSeconds: 3600 },
    },
  );
  const file = join(cluster.dir, `installer-${ns}.kubeconfig`);
  const ca = Buffer.from(cluster.ca).toString('base64');
  writeFileSync(
    file,
    [
      'apiVersion: v1',
      'kind: Config',
      'clusters:',
      `- name: c`,
      `  cluster: {server: "${cluster.server}", certificate-authority-data: ${ca}}`,
      'users:',
      `- name: installer`,
      `  user: {token: "${token.status.token}"}`,
      'contexts:',
      '- name: x',
      `  context: {cluster: c, user: installer, namespace: ${ns}}`,
      'current-context: x',
      '',
    ].join('\n'),
    { mode: 0o600 },
  );
  return file;
}

type Container = {
  securityContext: unknown;
  livenessProbe: { httpGet: { path: string; scheme: string } };
  readinessProbe: { httpGet: { path: string; scheme: string } };
  resources: { limits: Record<string, string> };
  volumeMounts: { mountPath: string }[];
  env?: { name: string; value?: string }[];
};
type PodSpec = { securityContext: unknown; containers: Container[] };
type PodTemplateSpec = {
  enableServiceLinks: boolean;
  containers: { image: string; env: { name: string; value?: string }[] }[];
};
type PoolPod = K8sObject & { spec: PodTemplateSpec };

// Last: deleting a CRD changes the cluster for everything after it.
describe('install without agent-sandbox', () => {
  it('is refused with a message saying to install agent-sandbox first', async () => {
    await cluster.api.must(
      'DELETE',
      '/apis/apiextensions.k8s.io/v1/customresourcedefinitions/sandboxtemplates.extensions.agents.x-k8s.io',
    );
    await waitFor('SandboxTemplate no longer served', async () => {
      const res = await cluster.api.get<{ resources?: { name: string }[] }>(
        '/apis/extensions.agents.x-k8s.io/v1beta1',
      );
      return !(res.body.resources ?? []).some((r) => r.name === 'sandboxtemplates');
    });
    const res = await helm(
      home,
      ['install', 'slipway', CHART, '-n', NS, '--set', 'sources.s3.existingSecret=slipway-s3'],
      cluster.kubeconfig,
    );
    expect(res.code).not.toBe(0);
    expect(res.stderr).toContain(
      'agent-sandbox is not installed: the extensions.agents.x-k8s.io/v1beta1 API (SandboxTemplate, SandboxWarmPool, SandboxClaim) is not served',
    );
    // Offline rendering (no cluster to ask) is not blocked by the check.
    expect((await render(home)).objects.length).toBeGreaterThan(0);
  });
});
