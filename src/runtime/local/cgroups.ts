import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmdirSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';

/** Per-sandbox memory and pid limits through cgroups, where this host lets us set them. */
export interface CgroupSupport {
  enforced: boolean;
  /** What is enforced and how, or why not. */
  detail: string;
  /** A fresh cgroup with the limits set, or undefined when not enforced. */
  create(name: string): Cgroup | undefined;
}

export interface Cgroup {
  /** Each hierarchy's `cgroup.procs`: the launcher writes its own pid to every one, then execs. */
  readonly procsFiles: string[];
  /** Pids still inside (any hierarchy). */
  pids(): number[];
  /** Removes the cgroup; throws if processes are still inside. */
  remove(): void;
}

export interface CgroupLimits {
  memoryBytes: number;
  pids: number;
}

interface Hierarchy {
  /** Directory our sandboxes' cgroups are created in. */
  base: string;
  /** Files to write in each new cgroup, in order (a memory limit before its memsw twin). */
  limits: [file: string, value: string][];
}

/**
 * Finds where we may create child cgroups with memory and pid limits: cgroup v1 `memory` and `pids`
 * hierarchies, or a cgroup v2 subtree, under the control plane's own cgroup. Probes by creating a
 * cgroup and writing the limits, so "enforced" means the kernel accepted them here.
 */
export function detectCgroups(
  limits: CgroupLimits,
  log: (msg: string, extra?: object) => void,
): CgroupSupport {
  const mounts = readMounts();
  const own = readOwnCgroups();
  let hierarchies: Hierarchy[];
  let flavour: string;
  try {
    const v1Memory = mounts.find((m) => m.type === 'cgroup' && m.options.includes('memory'));
    const v1Pids = mounts.find((m) => m.type === 'cgroup' && m.options.includes('pids'));
    const v2 = mounts.find((m) => m.type === 'cgroup2');
    if (v1Memory && v1Pids) {
      flavour = 'cgroup v1';
      hierarchies = [
        {
          base: join(v1Memory.point, relative(own.get('memory'), v1Memory.root), 'slipway'),
          limits: [
            ['memory.limit_in_bytes', String(limits.memoryBytes)],
            ['memory.memsw.limit_in_bytes', String(limits.memoryBytes)],
          ],
        },
        {
          base: join(v1Pids.point, relative(own.get('pids'), v1Pids.root), 'slipway'),
          limits: [['pids.max', String(limits.pids)]],
        },
      ];
    } else if (v2 && !v1Memory) {
      flavour = 'cgroup v2';
      const base = join(v2.point, relative(own.get(''), v2.root), 'slipway');
      hierarchies = [
        {
          base,
          limits: [
            ['memory.max', String(limits.memoryBytes)],
            ['pids.max', String(limits.pids)],
          ],
        },
      ];
      prepareV2(base);
    } else {
      return notEnforced('no cgroup memory and pids controllers are mounted');
    }
    probe(hierarchies);
  } catch (err) {
    return notEnforced(err instanceof Error ? err.message : String(err));
  }
  sweepStale(hierarchies, log);
  const mb = Math.round(limits.memoryBytes / (1024 * 1024));
  return {
    enforced: true,
    detail: `${flavour}: ${mb} MB memory and ${limits.pids} pids per sandbox (${hierarchies.map((h) => h.base).join(', ')})`,
    create: (name) => createIn(hierarchies, name),
  };
}

function notEnforced(why: string): CgroupSupport {
  return {
    enforced: false,
    detail: `memory and pid limits are not enforced: ${why}`,
    create: () => undefined,
  };
}

function createIn(hierarchies: Hierarchy[], name: string): Cgroup {
  const dirs = hierarchies.map((h) => join(h.base, name));
  hierarchies.forEach((h, i) => {
    const dir = dirs[i] as string;
    mkdirSync(dir, { recursive: true });
    for (const [file, value] of h.limits) {
      // memsw exists only with swap accounting on; without it there is no swap to escape into.
      if (file.includes('memsw') && !existsSync(join(dir, file))) continue;
      writeFileSync(join(dir, file), value);
    }
  });
  return {
    procsFiles: dirs.map((d) => join(d, 'cgroup.procs')),
    pids: () => [...new Set(dirs.flatMap((d) => readPids(join(d, 'cgroup.procs'))))],
    remove: () => dirs.forEach((d) => existsSync(d) && rmdirSync(d)),
  };
}

function probe(hierarchies: Hierarchy[]): void {
  const cgroup = createIn(hierarchies, `probe-${process.pid}`);
  try {
    hierarchies.forEach((h, i) => {
      const dir = cgroup.procsFiles[i]?.replace(/\/cgroup\.procs$/, '') ?? '';
      const [file, value] = h.limits[0] as [string, string];
      const read = readFileSync(join(dir, file), 'utf8').trim();
      if (read !== value)
        throw new Error(`${join(dir, file)} reads ${read} after writing ${value}`);
    });
  } finally {
    cgroup.remove();
  }
}

/**
 * Sandbox cgroups left by a control plane that died (its sandboxes died with it): empty, and
 * older than any boot in progress, since a new one is empty until its launcher joins it.
 */
function sweepStale(hierarchies: Hierarchy[], log: (msg: string, extra?: object) => void): void {
  const cutoff = Date.now() - 60_000;
  for (const { base } of hierarchies) {
    for (const name of readdirSync(base)) {
      const dir = join(base, name);
      try {
        if (!name.startsWith('sb-') || statSync(dir).mtimeMs > cutoff) continue;
        if (readPids(join(dir, 'cgroup.procs')).length === 0) rmdirSync(dir);
      } catch (err) {
        // Someone else's sweep got there first, or it is in use after all: leave it.
        log('stale sandbox cgroup not removed', { dir, error: String(err) });
      }
    }
  }
}

/** v2 only lets a cgroup with no processes of its own hand controllers to its children. */
function prepareV2(base: string): void {
  mkdirSync(base, { recursive: true });
  writeFileSync(join(base, 'cgroup.subtree_control'), '+memory +pids');
}

function readPids(file: string): number[] {
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l !== '')
    .map(Number);
}

interface Mount {
  root: string;
  point: string;
  type: string;
  options: string[];
}

function readMounts(): Mount[] {
  return readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .filter((l) => l !== '')
    .map((line) => {
      const [left = '', right = ''] = line.split(' - ');
      const fields = left.split(' ');
      const [type = '', , superOptions = ''] = right.split(' ');
      return {
        root: fields[3] ?? '/',
        point: fields[4] ?? '',
        type,
        options: superOptions.split(','),
      };
    });
}

/** controller → our path in that hierarchy ('' for the v2 unified one). */
function readOwnCgroups(): Map<string, string> {
  const own = new Map<string, string>();
  for (const line of readFileSync('/proc/self/cgroup', 'utf8').split('\n')) {
    const [, controllers, path] = /^\d+:([^:]*):(.*)$/.exec(line) ?? [];
    if (controllers === undefined || path === undefined) continue;
    for (const c of controllers.split(',')) own.set(c, path);
  }
  return own;
}

function relative(path: string | undefined, mountRoot: string): string {
  const p = path ?? '/';
  return mountRoot !== '/' && p.startsWith(mountRoot) ? p.slice(mountRoot.length) || '/' : p;
}
