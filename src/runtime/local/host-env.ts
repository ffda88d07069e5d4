import {
  existsSync,
  lstatSync,
  mkdirSync,
  readlinkSync,
  realpathSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join } from 'node:path';

/** Facts about this machine that shape every sandbox: read once, at runtime start. */
export interface HostEnv {
  /** bubblewrap, or undefined when it is not installed (the runtime then refuses to start). */
  bwrap: string | undefined;
  /** The node binary the agent runs with: the control plane's own. */
  node: string;
  /** A python3 under /usr, or undefined (then no python template). */
  python: string | undefined;
  /** setpriv, to drop to the sandbox uid after joining a cgroup as root. */
  setpriv: string | undefined;
  /** /bin, /lib, ...: a symlink into /usr (merged-usr) or a real directory to bind. */
  systemDirs: { path: string; symlinkTo?: string }[];
  /** Install dirs outside /usr that the binaries need (a node under /opt, say), bound read-only. */
  extraReadOnly: string[];
}

const SYSTEM_DIRS = ['/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32'];

export function readHostEnv(): HostEnv {
  const node = realpathSync(process.execPath);
  const extraReadOnly: string[] = [];
  if (!node.startsWith('/usr/')) extraReadOnly.push(dirname(dirname(node)));
  const systemDirs: HostEnv['systemDirs'] = [];
  for (const path of SYSTEM_DIRS) {
    if (!existsSync(path)) continue;
    const stat = lstatSync(path);
    if (stat.isSymbolicLink()) systemDirs.push({ path, symlinkTo: readlinkSync(path) });
    else if (stat.isDirectory()) systemDirs.push({ path });
  }
  return {
    bwrap: firstExisting(['/usr/bin/bwrap', '/usr/local/bin/bwrap']),
    node,
    // Only a python under /usr: the one on PATH may live in a home directory we do not bind.
    python: firstExisting(['/usr/bin/python3', '/usr/local/bin/python3']),
    setpriv: firstExisting(['/usr/bin/setpriv', '/bin/setpriv']),
    systemDirs,
    extraReadOnly,
  };
}

/** The uid and gid every sandbox sees itself as inside (`nobody`), whatever its host uid. */
export const SANDBOX_UID = 65534;

/**
 * The few /etc files a sandbox gets instead of the host's /etc: names resolve to loopback only
 * (DNS is the egress gate's business) and the sandbox user has a passwd entry.
 */
export function writeEtcFiles(dir: string, hostname: string): void {
  mkdirSync(dir, { recursive: true, mode: 0o755 });
  const files: Record<string, string> = {
    hosts: `127.0.0.1 localhost\n::1 ip6-localhost ip6-loopback\n127.0.1.1 ${hostname}\n`,
    passwd: `root:x:0:0:root:/root:/usr/sbin/nologin\nnobody:x:${SANDBOX_UID}:${SANDBOX_UID}:nobody:/tmp:/usr/sbin/nologin\n`,
    group: `root:x:0:\nnogroup:x:${SANDBOX_UID}:\n`,
    'nsswitch.conf': 'passwd: files\ngroup: files\nhosts: files\n',
  };
  for (const [name, content] of Object.entries(files)) {
    writeFileSync(join(dir, name), content, { mode: 0o644 });
  }
}

function firstExisting(paths: string[]): string | undefined {
  return paths.find((p) => existsSync(p));
}
