import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmdirSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join } from 'node:path';
import type { Log } from '../../logging.js';

/** Per-sandbox memory, pid and CPU limits through cgroups, where this host lets us set them. */
export interface CgroupSupport {
  enforced: boolean;
  /** What is enforced and how, or why not. */
  detail: string;
  /** A fresh cgroup with the limits set, or undefined when not enforced. */
  create(name: string): Cgroup | undefined;
  /** Removes this instance's (by then empty) cgroup folders. */
  dispose(): void;
  /** Removes what another instance, now dead, left: its sandboxes' cgroups and its folders. */
  removeInstance(instance: string): void;
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
  /** CPUs' worth of time per sandbox (1.5 = one and a half cores), as a CFS quota. */
  cpu: number;
}

/** The CFS period the CPU quota is a share of. */
const CPU_PERIOD_US = 100_000;

interface Hierarchy {
  /** Directory our sandboxes' cgroups are created in. */
  base: string;
  /** Files to write in each new cgroup, in order (a memory limit before its memsw twin). */
  limits: [file: string, value: string][];
}

/**
 * Finds where we may create child cgroups with memory, pid and CPU limits: cgroup v1 `memory`,
 * `pids` and `cpu` hierarchies, or a cgroup v2 subtree, under the control plane's own cgroup, in
 * a folder of this instance's own (`slipway/<instance>`). Probes by creating a cgroup and writing
 * the limits, so "enforced" means the kernel accepted them here. CPU is enforced where the `cpu`
 * controller is available and said when it is not.
 */
export function detectCgroups(
  limits: CgroupLimits,
  instance: string,
  log: Log,
  /** Sandbox cgroups (`sb-<id>`) of running sandboxes to adopt: not stale. */
  spare: ReadonlySet<string> = new Set(),
): CgroupSupport {
  const mounts = readMounts();
  const own = readOwnCgroups();
  const quota = String(Math.max(1_000, Math.round(limits.cpu * CPU_PERIOD_US)));
  const v1 = (controller: string) =>
    mounts.find((m) => m.type === 'cgroup' && m.options.includes(controller));
  const v1Base = (mount: Mount, controller: string) =>
    join(mount.point, relative(own.get(controller), mount.root), 'slipway', instance);
  let hierarchies: Hierarchy[];
  let flavour: string;
  let cpu = true;
  try {
    const [v1Memory, v1Pids, v1Cpu] = [v1('memory'), v1('pids'), v1('cpu')];
    const v2 = mounts.find((m) => m.type === 'cgroup2');
    if (v1Memory && v1Pids) {
      flavour = 'cgroup v1';
      hierarchies = [
        {
          base: v1Base(v1Memory, 'memory'),
          limits: [
            ['memory.limit_in_bytes', String(limits.memoryBytes)],
            ['memory.memsw.limit_in_bytes', String(limits.memoryBytes)],
          ],
        },
        { base: v1Base(v1Pids, 'pids'), limits: [['pids.max', String(limits.pids)]] },
      ];
      if (v1Cpu) {
        hierarchies.push({
          base: v1Base(v1Cpu, 'cpu'),
          limits: [
            ['cpu.cfs_period_us', String(CPU_PERIOD_US)],
            ['cpu.cfs_quota_us', quota],
          ],
        });
      } else cpu = false;
    } else if (v2 && !v1Memory) {
      flavour = 'cgroup v2';
      const parent = join(v2.point, relative(own.get(''), v2.root), 'slipway');
      const base = join(parent, instance);
      cpu = prepareV2([parent, base]);
      hierarchies = [
        {
          base,
          limits: [
            ['memory.max', String(limits.memoryBytes)],
            ['pids.max', String(limits.pids)],
            ...(cpu ? [['cpu.max', `${quota} ${CPU_PERIOD_US}`] as [string, string]] : []),
          ],
        },
      ];
    } else {
      return notEnforced('no cgroup memory and pids controllers are mounted');
    }
    probe(hierarchies);
  } catch (err) {
    return notEnforced(err instanceof Error ? err.message : String(err));
  }
  sweepStale(
    hierarchies.map((h) => h.base),
    log,
    spare,
  );
  const mb = Math.round(limits.memoryBytes / (1024 * 1024));
  const cpuText = cpu ? `, ${limits.cpu} CPU` : ' (CPU not limited: no cpu controller)';
  return {
    enforced: true,
    detail: `${flavour}: ${mb} MB memory and ${limits.pids} pids per sandbox${cpuText} (${hierarchies.map((h) => h.base).join(', ')})`,
    create: (name) => createIn(hierarchies, name),
    dispose: () =>
      removeBases(
        hierarchies.map((h) => h.base),
        log,
      ),
    removeInstance: (other) => {
      const bases = hierarchies
        .map((h) => join(dirname(h.base), other))
        .filter((base) => existsSync(base));
      sweepStale(bases, log);
      removeBases(bases, log);
    },
  };
}

function notEnforced(why: string): CgroupSupport {
  return {
    enforced: false,
    detail: `memory, pid and CPU limits are not enforced: ${why}`,
    create: () => undefined,
    dispose: () => undefined,
    removeInstance: () => undefined,
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
 * Sandbox cgroups a previous run of this instance left: the folder is this instance's alone, so
 * all but those of the sandboxes it adopts are stale now. A straggler still inside is killed.
 */
function sweepStale(bases: string[], log: Log, spare: ReadonlySet<string> = new Set()): void {
  for (const base of bases) {
    for (const name of readdirSync(base)) {
      const dir = join(base, name);
      if (!name.startsWith('sb-') || spare.has(name) || !statSync(dir).isDirectory()) continue;
      try {
        for (const pid of readPids(join(dir, 'cgroup.procs'))) killQuietly(pid);
        rmdirSync(dir);
      } catch (err) {
        log('info', 'stale sandbox cgroup not removed', { dir, error: String(err) });
      }
    }
  }
}

function removeBases(bases: string[], log: Log): void {
  for (const base of bases) {
    try {
      rmdirSync(base);
    } catch (err) {
      log('info', 'instance cgroup not removed', { dir: base, error: String(err) });
    }
  }
}

function killQuietly(pid: number): void {
  try {
    process.kill(pid, 'SIGKILL');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ESRCH') throw err;
  }
}

/**
 * v2 only lets a cgroup with no processes of its own hand controllers to its children. Returns
 * whether the cpu controller could be handed down too.
 */
function prepareV2(levels: string[]): boolean {
  let cpu = true;
  for (const dir of levels) {
    mkdirSync(dir, { recursive: true });
    const control = join(dir, 'cgroup.subtree_control');
    writeFileSync(control, '+memory +pids');
    try {
      writeFileSync(control, '+cpu');
    } catch (err) {
      // The cpu controller is not delegated to us: memory and pids still hold.
      if ((err as NodeJS.ErrnoException).code === undefined) throw err;
      cpu = false;
    }
  }
  return cpu;
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
