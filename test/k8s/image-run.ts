// Runs a process from an image's root filesystem, as a container runtime would: test/k8s/images.sh
// unpacks each image into a bundle (rootfs/ and the OCI runtime config.json umoci writes), and
// this starts the image's process in a bwrap container whose root is that rootfs, read-only, as
// the given user, with tmpfs volumes of a given size, host directories bound in, and a memory
// limit through a cgroup of its own.
//
// How: bwrap runs as root (no user namespace: it mounts the rootfs, volumes and binds as a runtime
// does), after a shell put it in the run's cgroup; inside, the image's own setpriv (util-linux, in
// every Debian image) drops to the user, with no capabilities and no_new_privs, and execs the
// entry point. The process never has root: files it makes on volumes are the user's.
// Mount points the image lacks are made in the rootfs first (a runtime makes them in the
// container's writable layer; here the rootfs is shared and read-only to every pod), their paths
// resolved inside it: Debian's /var/run is a link to /run, which on the host is the host's.
import {
  existsSync,
  lstatSync,
  mkdirSync,
  readFileSync,
  readlinkSync,
  rmdirSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { cacheDir } from './cluster.js';

export const bundlesDir = join(cacheDir, 'images', 'bundles');

/** The part of an OCI runtime config (umoci unpack's config.json) a run starts from. */
type RuntimeConfig = {
  process: { args: string[]; env: string[]; cwd: string; user: { uid: number; gid: number } };
};

export type ImageRun = {
  /** A bundle directory: rootfs/ and config.json. */
  bundle: string;
  /** Replaces the image's entry point and arguments (a pod's command + args). */
  args?: string[];
  /** Over the image's env. */
  env?: Record<string, string>;
  cwd?: string;
  uid?: number;
  gid?: number;
  /** Supplementary groups (a pod's fsGroup). */
  groups?: number[];
  /** tmpfs mounts: emptyDir volumes, with sizeLimit when it has one. */
  tmpfs?: { path: string; bytes?: number }[];
  /** Host directories bound in. */
  binds?: { host: string; path: string; readOnly?: boolean }[];
  memoryBytes?: number;
  /** Names the cgroup (unique per run) and the UTS hostname. */
  name: string;
};

export type ImageProcess = {
  command: string;
  args: string[];
  env: Record<string, string>;
  /** Removes the run's cgroup once its processes are gone. */
  cleanup(): void;
};

export function readBundle(bundle: string): RuntimeConfig {
  const file = join(bundle, 'config.json');
  if (!existsSync(file)) throw new Error(`no image bundle at ${bundle}: run test/k8s/build.sh`);
  return JSON.parse(readFileSync(file, 'utf8')) as RuntimeConfig;
}

/** cgroup v2 (memory.max) or the v1 memory controller (memory.limit_in_bytes). */
function memoryCgroup(name: string, bytes: number): string {
  const v2 = existsSync('/sys/fs/cgroup/cgroup.controllers');
  const dir = v2
    ? join('/sys/fs/cgroup', 'slipway-test-node', name)
    : join('/sys/fs/cgroup/memory', 'slipway-test-node', name);
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, v2 ? 'memory.max' : 'memory.limit_in_bytes'), String(bytes));
  if (v2) writeFileSync(join(dir, 'memory.swap.max'), '0');
  return dir;
}

/**
 * Removes a cgroup once it is empty: the run's processes die with bwrap (--die-with-parent), a
 * moment after it exits, and until then rmdir says EBUSY.
 */
function removeCgroup(dir: string, tries: number): void {
  try {
    rmdirSync(dir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EBUSY' && tries > 0) {
      setTimeout(() => removeCgroup(dir, tries - 1), 100).unref();
      return;
    }
    process.stderr.write(`[image-run] cgroup ${dir} not removed: ${String(err)}\n`);
  }
}

/** `path` as the container sees it: its symlinks followed within `rootfs`, never out of it. */
export function pathInRoot(rootfs: string, path: string): string {
  const parts = path.split('/').filter(Boolean);
  let resolved: string[] = [];
  for (let hops = 0; parts.length > 0;) {
    const part = parts.shift() ?? '';
    if (part === '.') continue;
    if (part === '..') {
      resolved.pop();
      continue;
    }
    const host = join(rootfs, ...resolved, part);
    if (lstatSync(host, { throwIfNoEntry: false })?.isSymbolicLink()) {
      if (++hops > 40) throw new Error(`${path}: too many symlinks in the image`);
      const target = readlinkSync(host);
      parts.unshift(...target.split('/').filter(Boolean));
      if (target.startsWith('/')) resolved = [];
      continue;
    }
    resolved.push(part);
  }
  return `/${resolved.join('/')}`;
}

const quote = (s: string) => `'${s.replaceAll("'", `'\\''`)}'`;

export function imageProcess(run: ImageRun): ImageProcess {
  const config = readBundle(run.bundle);
  const rootfs = join(run.bundle, 'rootfs');
  const uid = run.uid ?? config.process.user.uid;
  const gid = run.gid ?? config.process.user.gid;
  if (uid === 0) throw new Error(`${run.name}: the test node runs no container as root`);
  const env: Record<string, string> = {};
  for (const kv of config.process.env) {
    const i = kv.indexOf('=');
    env[kv.slice(0, i)] = kv.slice(i + 1);
  }
  Object.assign(env, run.env);
  const tmpfs = (run.tmpfs ?? []).map((t) => ({ ...t, path: pathInRoot(rootfs, t.path) }));
  const binds = (run.binds ?? []).map((b) => ({ ...b, path: pathInRoot(rootfs, b.path) }));
  for (const { path } of [...tmpfs, ...binds]) mkdirSync(join(rootfs, path), { recursive: true });

  const cgroup = run.memoryBytes ? memoryCgroup(run.name, run.memoryBytes) : '';
  const bwrap = [
    '/usr/bin/bwrap',
    '--die-with-parent',
    '--unshare-pid',
    '--unshare-ipc',
    '--unshare-uts',
    '--hostname',
    run.name.slice(0, 63),
    '--ro-bind',
    rootfs,
    '/',
    '--proc',
    '/proc',
    '--dev',
    '/dev',
    ...tmpfs.flatMap((t) => [
      ...(t.bytes ? ['--size', String(t.bytes)] : []),
      '--perms',
      '0777',
      '--tmpfs',
      t.path,
    ]),
    ...binds.flatMap((b) => [b.readOnly ? '--ro-bind' : '--bind', b.host, b.path]),
    '--chdir',
    run.cwd ?? config.process.cwd,
    '--',
    '/usr/bin/setpriv',
    `--reuid=${uid}`,
    `--regid=${gid}`,
    run.groups?.length ? `--groups=${run.groups.join(',')}` : '--clear-groups',
    '--inh-caps=-all',
    '--bounding-set=-all',
    '--no-new-privs',
    '--',
    ...(run.args ?? config.process.args),
  ];
  const script = [
    'set -e',
    ...(cgroup ? [`echo $$ > ${quote(join(cgroup, 'cgroup.procs'))}`] : []),
    `exec ${bwrap.map(quote).join(' ')}`,
  ].join('\n');
  return {
    command: '/bin/sh',
    args: ['-c', script],
    env,
    cleanup() {
      if (cgroup) removeCgroup(cgroup, 50);
    },
  };
}
