// How the test node runs a pod from its image (image-run.ts): the image reference of the pod's
// first container picks one of the bundles test/k8s/images.sh unpacked, and the pod spec decides
// what a kubelet would: command and args over the image's entry point, workingDir, the user
// (runAsUser/runAsGroup, the container's over the pod's, else the image's USER; fsGroup as a
// supplementary group), readOnlyRootFilesystem (required: the rootfs is shared by every pod),
// emptyDir volumes as tmpfs mounts of their sizeLimit, configMap, secret and projected volumes
// (the ServiceAccount token among them) filled from the API and bound read-only (pod-volumes.ts,
// with `volumes` given), and the memory limit as a cgroup's.
// Pods ask for other volume kinds (a PVC), subPath mounts or a writable root filesystem at their
// peril: the node refuses them (the pod stays Pending, the reason in the node's log), rather than
// run them differently.
import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { AgentProcess, Api, Pod } from './cluster.js';
import { bundlesDir, imageProcess } from './image-run.js';
import { fromApi, writeVolume, type ApiVolume } from './pod-volumes.js';

type SecurityContext = {
  runAsUser?: number;
  runAsGroup?: number;
  runAsNonRoot?: boolean;
  readOnlyRootFilesystem?: boolean;
  fsGroup?: number;
};
type ImageContainer = {
  image?: string;
  command?: string[];
  args?: string[];
  workingDir?: string;
  securityContext?: SecurityContext;
  resources?: { limits?: { memory?: string } };
  volumeMounts?: { name: string; mountPath: string; subPath?: string }[];
};
type ImagePodSpec = {
  securityContext?: SecurityContext;
  containers?: ImageContainer[];
  volumes?: (ApiVolume & { emptyDir?: { sizeLimit?: string; medium?: string } })[];
};

const UNITS: Record<string, number> = {
  '': 1,
  k: 1e3,
  M: 1e6,
  G: 1e9,
  Ki: 2 ** 10,
  Mi: 2 ** 20,
  Gi: 2 ** 30,
};

/** A Kubernetes quantity of bytes ("512Mi", "1G", "1048576") in bytes. */
export function bytesOf(quantity: string): number {
  const m = /^(\d+)(|k|M|G|Ki|Mi|Gi)$/.exec(quantity);
  if (!m) throw new Error(`quantity ${quantity}: not one the test node reads`);
  return Number(m[1]) * (UNITS[m[2] ?? ''] ?? 1);
}

/** The full reference ("docker.io/slipway/agent:0.1.0") without docker.io's defaults. */
export function shortRef(ref: string): string {
  return ref.replace(/^docker\.io\//, '').replace(/^library\//, '');
}

/** The bundles images.sh unpacked, by short image reference. */
export function imageBundles(dir = bundlesDir): Map<string, string> {
  const found = new Map<string, string>();
  for (const name of existsSync(dir) ? readdirSync(dir) : []) {
    const file = join(dir, name, 'reference');
    if (existsSync(file)) found.set(shortRef(readFileSync(file, 'utf8').trim()), join(dir, name));
  }
  return found;
}

export type ImagePodOptions = {
  /** Added to every pod's env (e.g. per-pod loopback ports on the shared host network). */
  extraEnv?: (pod: Pod) => Record<string, string>;
  /** Fill configMap, secret and projected volumes from this API, in a directory under `dir`. */
  volumes?: { api: Api; dir: string };
};

export function imagePodCommand(
  opts: ImagePodOptions = {},
): (pod: Pod, ip: string, env: Record<string, string>) => Promise<AgentProcess> {
  const bundles = imageBundles();
  let runs = 0;
  return async (pod, _ip, env) => {
    const spec = (pod.spec ?? {}) as ImagePodSpec;
    const c = spec.containers?.[0] ?? {};
    const podName = `${pod.metadata?.namespace}_${pod.metadata?.name}`;
    const bundle = bundles.get(shortRef(c.image ?? ''));
    if (!bundle) {
      throw new Error(
        `image ${c.image}: not one images.sh built (${[...bundles.keys()].join(', ')})`,
      );
    }
    const sc = { ...spec.securityContext, ...c.securityContext };
    if (sc.readOnlyRootFilesystem !== true) {
      throw new Error(`${podName}: the test node runs only readOnlyRootFilesystem containers`);
    }
    const name = `${podName}-${++runs}`;
    const tmpfs: { path: string; bytes?: number }[] = [];
    const binds: { host: string; path: string; readOnly: true }[] = [];
    const filled = opts.volumes ? join(opts.volumes.dir, 'volumes', name) : undefined;
    // A refused pod leaves no volume files behind (its token among them).
    const refuse = (message: string): never => {
      if (filled) rmSync(filled, { recursive: true, force: true });
      throw new Error(`${podName}: ${message}`);
    };
    for (const mount of c.volumeMounts ?? []) {
      const volume = spec.volumes?.find((v) => v.name === mount.name);
      if (mount.subPath) refuse('subPath mounts are not supported');
      if (volume?.emptyDir) {
        const limit = volume.emptyDir.sizeLimit;
        tmpfs.push({ path: mount.mountPath, ...(limit ? { bytes: bytesOf(limit) } : {}) });
      } else if (volume && fromApi(volume) && opts.volumes && filled) {
        const host = join(filled, volume.name);
        await writeVolume(opts.volumes.api, pod, volume, host, sc.fsGroup).catch((err: unknown) =>
          refuse(`volume ${volume.name}: ${String(err)}`),
        );
        binds.push({ host, path: mount.mountPath, readOnly: true });
      } else {
        refuse(`volume ${mount.name} is of a kind the test node cannot mount`);
      }
    }
    const memory = c.resources?.limits?.memory;
    const uid = sc.runAsUser;
    if (sc.runAsNonRoot && uid === 0) throw new Error(`${podName}: runAsNonRoot with uid 0`);
    const run = imageProcess({
      bundle,
      name,
      ...(c.command ? { args: [...c.command, ...(c.args ?? [])] } : {}),
      ...(c.workingDir ? { cwd: c.workingDir } : {}),
      ...(uid !== undefined ? { uid } : {}),
      ...(sc.runAsGroup !== undefined ? { gid: sc.runAsGroup } : {}),
      ...(sc.fsGroup !== undefined ? { groups: [sc.fsGroup] } : {}),
      tmpfs,
      binds,
      ...(memory ? { memoryBytes: bytesOf(memory) } : {}),
      env: { ...env, ...opts.extraEnv?.(pod) },
    });
    return {
      command: run.command,
      args: run.args,
      env: run.env,
      cleanup() {
        run.cleanup();
        if (filled) rmSync(filled, { recursive: true, force: true });
      },
    };
  };
}
