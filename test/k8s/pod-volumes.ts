// The volumes a kubelet fills from the API for a pod the test node runs from its image
// (image-pod.ts): configMap, secret and projected ones (serviceAccountToken from the TokenRequest
// API bound to the pod, configMap and secret keys, downwardAPI name/namespace/uid), written as
// files under a host directory that the pod gets read-only, as a kubelet's are. Files are root's,
// of the pod's fsGroup when it has one, with the volume's defaultMode (0644 unless set). Other
// kinds, a missing object that is not optional, or a downward field it does not know: refused.
import { chownSync, chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { Api, Pod } from './cluster.js';

type KeyToPath = { key: string; path: string; mode?: number };
type ObjectRef = { name: string; items?: KeyToPath[]; optional?: boolean };
type Projection = {
  serviceAccountToken?: { path: string; audience?: string; expirationSeconds?: number };
  configMap?: ObjectRef;
  secret?: ObjectRef;
  downwardAPI?: { items: { path: string; fieldRef?: { fieldPath: string }; mode?: number }[] };
};
export type ApiVolume = {
  name: string;
  configMap?: ObjectRef & { defaultMode?: number };
  secret?: { secretName: string; items?: KeyToPath[]; optional?: boolean; defaultMode?: number };
  projected?: { sources: Projection[]; defaultMode?: number };
};

/** True for the kinds writeVolume fills. */
export const fromApi = (v: object): v is ApiVolume =>
  'configMap' in v || 'secret' in v || 'projected' in v;

type File = { path: string; data: Buffer; mode?: number };

/** A ConfigMap's or Secret's keys (all, or `items`) as files; [] when missing and optional. */
async function keys(api: Api, ns: string, kind: 'configmaps' | 'secrets', ref: ObjectRef) {
  const res = await api.get<{ data?: Record<string, string>; binaryData?: Record<string, string> }>(
    `/api/v1/namespaces/${ns}/${kind}/${ref.name}`,
  );
  if (res.status === 404 && ref.optional) return [];
  if (res.status !== 200) throw new Error(`${kind}/${ref.name} → ${res.status}`);
  const values = new Map<string, Buffer>();
  for (const [k, v] of Object.entries(res.body.data ?? {})) {
    values.set(k, kind === 'secrets' ? Buffer.from(v, 'base64') : Buffer.from(v));
  }
  for (const [k, v] of Object.entries(res.body.binaryData ?? {})) {
    values.set(k, Buffer.from(v, 'base64'));
  }
  const items: KeyToPath[] = ref.items ?? [...values.keys()].map((key) => ({ key, path: key }));
  return items.flatMap((item): File[] => {
    const data = values.get(item.key);
    if (data === undefined) {
      if (ref.optional) return [];
      throw new Error(`${kind}/${ref.name} has no key ${item.key}`);
    }
    return [{ path: item.path, data, ...(item.mode !== undefined ? { mode: item.mode } : {}) }];
  });
}

/** A token for the pod's ServiceAccount, bound to the pod (it dies with it), as a kubelet asks. */
async function token(api: Api, pod: Pod, req: NonNullable<Projection['serviceAccountToken']>) {
  const spec = pod.spec as { serviceAccountName?: string } | undefined;
  const sa = spec?.serviceAccountName ?? 'default';
  const res = await api.must<{ status: { token: string } }>(
    'POST',
    `/api/v1/namespaces/${pod.metadata?.namespace}/serviceaccounts/${sa}/token`,
    {
      apiVersion: 'authentication.k8s.io/v1',
      kind: 'TokenRequest',
      spec: {
        ...(req.audience ? { audiences: [req.audience] } : {}),
        expirationSeconds: req.expirationSeconds ?? 3607,
        boundObjectRef: {
          apiVersion: 'v1',
          kind: 'Pod',
          name: pod.metadata?.name,
          uid: pod.metadata?.uid,
        },
      },
    },
  );
  return res.status.token;
}

function downward(pod: Pod, fieldPath: string | undefined): string {
  const value = {
    'metadata.name': pod.metadata?.name,
    'metadata.namespace': pod.metadata?.namespace,
    'metadata.uid': pod.metadata?.uid,
  }[fieldPath ?? ''];
  if (value === undefined) throw new Error(`downwardAPI ${fieldPath}: not one the test node fills`);
  return value;
}

async function filesOf(api: Api, pod: Pod, volume: ApiVolume): Promise<File[]> {
  const ns = pod.metadata?.namespace ?? 'default';
  if (volume.configMap) return keys(api, ns, 'configmaps', volume.configMap);
  if (volume.secret) {
    const { secretName, ...ref } = volume.secret;
    return keys(api, ns, 'secrets', { name: secretName, ...ref });
  }
  const files: File[] = [];
  for (const source of volume.projected?.sources ?? []) {
    if (source.serviceAccountToken) {
      const data = Buffer.from(await token(api, pod, source.serviceAccountToken));
      files.push({ path: source.serviceAccountToken.path, data });
    } else if (source.configMap) {
      files.push(...(await keys(api, ns, 'configmaps', source.configMap)));
    } else if (source.secret) {
      files.push(...(await keys(api, ns, 'secrets', source.secret)));
    } else if (source.downwardAPI) {
      for (const item of source.downwardAPI.items) {
        const data = Buffer.from(downward(pod, item.fieldRef?.fieldPath));
        files.push({
          path: item.path,
          data,
          ...(item.mode !== undefined ? { mode: item.mode } : {}),
        });
      }
    } else {
      throw new Error(`projected volume ${volume.name}: a source the test node does not fill`);
    }
  }
  return files;
}

/** Writes `volume`'s files into `dir` (made here), readable by `group` as the volume's mode says. */
export async function writeVolume(
  api: Api,
  pod: Pod,
  volume: ApiVolume,
  dir: string,
  group: number | undefined,
): Promise<void> {
  const files = await filesOf(api, pod, volume);
  const mode =
    volume.configMap?.defaultMode ??
    volume.secret?.defaultMode ??
    volume.projected?.defaultMode ??
    0o644;
  mkdirSync(dir, { recursive: true, mode: 0o755 });
  for (const f of files) {
    if (f.path.split('/').includes('..')) throw new Error(`volume ${volume.name}: path ${f.path}`);
    const file = join(dir, f.path);
    mkdirSync(dirname(file), { recursive: true, mode: 0o755 });
    writeFileSync(file, f.data);
    chownSync(file, 0, group ?? 0);
    chmodSync(file, f.mode ?? mode);
  }
}
