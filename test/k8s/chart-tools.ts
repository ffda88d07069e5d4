// helm and kubeconform (built by build.sh) run on charts/slipway, for the chart suite.
import { execFile, execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse, parseAllDocuments } from 'yaml';
import { cacheDir, type Cluster, type K8sObject } from './cluster.js';
import { schemaLocation } from './chart-schemas.js';

export const CHART = fileURLToPath(new URL('../../charts/slipway', import.meta.url));

/** The value files of the matrix: charts/slipway/ci/*-values.yaml, by name. */
export function ciValueFiles(): Record<string, string> {
  return Object.fromEntries(
    readdirSync(join(CHART, 'ci'))
      .filter((f) => f.endsWith('-values.yaml'))
      .sort()
      .map((f) => [f.replace(/-values\.yaml$/, ''), join(CHART, 'ci', f)]),
  );
}

export type RunResult = { code: number; stdout: string; stderr: string };

function run(bin: string, args: string[], env: Record<string, string>, input?: string) {
  const path = join(cacheDir, 'bin', bin);
  if (!existsSync(path)) throw new Error(`missing ${path}: run test/k8s/build.sh first`);
  return new Promise<RunResult>((resolve, reject) => {
    const child = execFile(
      path,
      args,
      {
        env: { PATH: process.env.PATH ?? '', ...env },
        maxBuffer: 64 * 1024 * 1024,
        timeout: 120_000,
      },
      (err, stdout, stderr) => {
        const code = err ? (typeof err.code === 'number' ? err.code : -1) : 0;
        if (err && code === -1) reject(err);
        else resolve({ code, stdout, stderr });
      },
    );
    if (input !== undefined) child.stdin?.end(input);
  });
}

/** helm with its own config/cache/data dirs under `home` (nothing of the user's is read or written). */
export function helm(home: string, args: string[], kubeconfig?: string): Promise<RunResult> {
  mkdirSync(home, { recursive: true });
  return run('helm', args, {
    HOME: home,
    HELM_CACHE_HOME: join(home, 'cache'),
    HELM_CONFIG_HOME: join(home, 'config'),
    HELM_DATA_HOME: join(home, 'data'),
    ...(kubeconfig ? { KUBECONFIG: kubeconfig } : {}),
  });
}

/** Throws with helm's stderr unless it exits 0; returns stdout. */
export async function mustHelm(home: string, args: string[], kubeconfig?: string) {
  const res = await helm(home, args, kubeconfig);
  if (res.code !== 0) throw new Error(`helm ${args.join(' ')} → ${res.code}: ${res.stderr}`);
  return res.stdout;
}

/** `helm template` of the chart into namespace `slipway`, as objects. */
export async function render(
  home: string,
  extra: string[] = [],
): Promise<{ text: string; objects: K8sObject[] }> {
  const text = await mustHelm(home, [
    'template',
    'slipway',
    CHART,
    '--namespace',
    'slipway',
    ...extra,
  ]);
  const objects = parseAllDocuments(text)
    .map((d) => d.toJS() as K8sObject | null)
    .filter((o): o is K8sObject => o !== null);
  return { text, objects };
}

/** kubeconform -strict over a multi-document YAML, against the generated schema dir. */
export async function kubeconform(schemaDir: string, yamlText: string) {
  const res = await run(
    'kubeconform',
    ['-strict', '-summary', '-output', 'json', '-schema-location', schemaLocation(schemaDir), '-'],
    { HOME: schemaDir },
    yamlText,
  );
  const report = JSON.parse(res.stdout) as {
    resources?: { kind: string; name: string; status: string; msg: string }[];
    summary: { valid: number; invalid: number; errors: number; skipped: number };
  };
  return { code: res.code, ...report };
}

/** The object of `kind` (and `name`, when given); throws when there is none. */
export function find(objects: K8sObject[], kind: string, name?: string): K8sObject {
  const hit = objects.find(
    (o) => o.kind === kind && (name === undefined || o.metadata?.name === name),
  );
  if (!hit) throw new Error(`no ${kind}${name ? ` ${name}` : ''} rendered`);
  return hit;
}

const EXT = '/apis/extensions.agents.x-k8s.io/v1beta1';

/**
 * The rendered chart's sandbox side, applied in `namespace`: its egress Service with `gateIp` as
 * ClusterIP, put on lo (nothing routes ClusterIPs here), and its SandboxTemplates, warm pools and
 * enroll Secrets. Returns the chart's own Slipway config.
 */
export async function applyChartSandboxes(
  cluster: Cluster,
  namespace: string,
  objects: K8sObject[],
  gateIp: string,
): Promise<Record<string, unknown>> {
  const egress = find(objects, 'Service', 'slipway-egress');
  execFileSync('ip', ['addr', 'add', `${gateIp}/32`, 'dev', 'lo']);
  await cluster.api.must('POST', `/api/v1/namespaces/${namespace}/services`, {
    ...egress,
    spec: { ...egress.spec, clusterIP: gateIp, clusterIPs: [gateIp] },
  });
  for (const obj of objects.filter((o) =>
    ['SandboxTemplate', 'SandboxWarmPool', 'Secret'].includes(String(o.kind)),
  )) {
    const plural = { SandboxTemplate: 'sandboxtemplates', SandboxWarmPool: 'sandboxwarmpools' }[
      String(obj.kind) as 'SandboxTemplate' | 'SandboxWarmPool'
    ];
    const base = plural
      ? `${EXT}/namespaces/${namespace}/${plural}`
      : `/api/v1/namespaces/${namespace}/secrets`;
    await cluster.api.must('POST', base, obj);
  }
  const config = find(objects, 'ConfigMap', 'slipway-config').data as Record<string, string>;
  return parse(String(config['config.yaml'])) as Record<string, unknown>;
}
