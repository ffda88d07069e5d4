import { existsSync, readdirSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { AGENT_SOCK } from '../../agent/protocol.js';
import { RuntimeError } from '../runtime.js';
import { bundleAgent } from './agent-bundle.js';
import { detectCgroups, type CgroupLimits, type CgroupSupport } from './cgroups.js';
import { readHostEnv, writeEtcFiles, type HostEnv } from './host-env.js';
import {
  checkReachable,
  claimRuntimeDir,
  deadSibling,
  deadSiblings,
  instanceId,
  type DeadSibling,
  isRoot,
  makePrivateDir,
  runtimeRoot,
} from './runtime-dir.js';
import { tryLockDataDir, type DataDirLock } from '../../persistence/data-dir-lock.js';
import { startTime } from './process-tree.js';
import { heldIds, readRecord, type SandboxRecord } from './sandbox-record.js';
import { BootBudget } from './boot-budget.js';
import { SandboxUsers, type UidRange } from './sandbox-users.js';
import { seccompProgram } from './seccomp.js';
import { warmupTarball } from './warmup-source.js';
import type { Log } from '../../logging.js';

/** Everything sandboxes share, prepared once at runtime start. */
export interface HostSetup {
  env: HostEnv;
  dirs: {
    runtime: string;
    sandboxes: string;
    held: string;
    /** Links to running sandboxes' app sockets, for the native front door (route-link.ts). */
    routes: string;
    etc: string;
    agent: string;
  };
  /** Sandboxes outlive this process (their streams and records held under dirs.held). */
  keep: boolean;
  /**
   * What a previous control plane left running, by record (pid and its start time still match):
   * the runtime adopts or reaps each. A leftover without a running record is gone already.
   */
  leftovers: SandboxRecord[];
  cgroups: CgroupSupport;
  /** Hands out the host uid each sandbox runs as (ours when we are not root). */
  users: SandboxUsers;
  /** The BPF program bwrap loads before it execs the agent. */
  seccomp: Buffer;
  warmup: Buffer;
  hostname: string;
  boots: BootBudget;
}

export interface HostOptions {
  dataDir: string;
  /** `runtime.dir`: the parent of this instance's runtime dir; a default when absent. */
  runtimeDir: string | undefined;
  uids: UidRange;
  limits: CgroupLimits;
  /** Sandboxes are to outlive this process (server.restartContinuity). */
  keep: boolean;
}

/**
 * Checks bwrap, lays out this instance's runtime dir, bundles the agent, builds the seccomp
 * filter and decides which limits hold; removes what killed instances left. Sandboxes never run
 * as host uid 0: as root each gets a uid of its own, and a host where they could not reach what
 * they bind refuses to start. Sandboxes a previous run of this instance left running (their
 * records say so) are spared for the runtime to adopt or reap; every other leftover goes.
 */
export async function prepareHost(opts: HostOptions, env: HostEnv, log: Log): Promise<HostSetup> {
  if (!env.bwrap) throw new RuntimeError('bubblewrap (bwrap) is not installed', false);
  const root = isRoot();
  if (root && !env.setpriv) {
    throw new RuntimeError('setpriv (util-linux) is needed to run sandboxes unprivileged', false);
  }
  const runtime = runtimeRoot(opts.dataDir, opts.runtimeDir);
  const dirs = {
    runtime,
    sandboxes: join(runtime, 'sandboxes'),
    held: join(runtime, 'held'),
    routes: join(runtime, 'routes'),
    etc: join(runtime, 'etc'),
    agent: join(runtime, 'agent.mjs'),
  };
  for (const dir of [dirs.runtime, dirs.sandboxes]) makePrivateDir(dir);
  claimRuntimeDir(dirs.runtime, opts.dataDir);
  makePrivateDir(dirs.held, 0o700);
  makePrivateDir(dirs.routes, 0o700);
  checkReachable(dirs.sandboxes, 'runtime.dir');
  for (const binary of [env.node, ...(env.python ? [env.python] : [])]) {
    checkReachable(binary, 'the interpreter');
  }
  const leftovers = runningRecords(dirs.held);
  const spared = new Set(leftovers.map((r) => r.id));
  await Promise.all(
    [
      ...readdirSync(dirs.sandboxes).map((name) => ({
        id: name,
        path: join(dirs.sandboxes, name),
      })),
      ...readdirSync(dirs.held).map((name) => ({ id: name, path: join(dirs.held, name) })),
      ...readdirSync(dirs.routes).map((name) => ({
        id: name.replace(/\.sock$/, ''),
        path: join(dirs.routes, name),
      })),
    ]
      .filter(({ id }) => !spared.has(id))
      .map(({ path }) => rm(path, { recursive: true, force: true })),
  );
  const longest = join(dirs.sandboxes, 'x'.repeat(12), AGENT_SOCK);
  if (Buffer.byteLength(longest) > 107) {
    throw new RuntimeError(`runtime.dir is too long for unix socket paths (${longest})`, false);
  }
  await bundleAgent(dirs.agent);
  const hostname = 'slipway';
  writeEtcFiles(dirs.etc, hostname);
  const id = instanceId(opts.dataDir);
  const cgroups = detectCgroups(opts.limits, id, log, new Set(leftovers.map((r) => `sb-${r.id}`)));
  for (const dead of deadSiblings(dirs.runtime)) {
    await sweepSibling(dirs.runtime, dead, cgroups, log);
  }
  const users = new SandboxUsers(root ? opts.uids : undefined, parseInt(id.slice(0, 8), 16));
  return {
    env,
    dirs,
    keep: opts.keep,
    leftovers,
    cgroups,
    users,
    seccomp: seccompProgram(),
    warmup: await warmupTarball(),
    boots: new BootBudget(),
    hostname,
  };
}

/**
 * Removes what a killed instance of another data dir left (its runtime dir and cgroups), once
 * none of its sandboxes runs: running ones wait for their own instance's next start. Under its
 * data dir's lock, checked again there: that data dir's next server may be starting right now,
 * with the dead owner's file not yet replaced, and would find its runtime dir gone. A data dir
 * that no longer exists has no server to start (a new one at that path would have to be made
 * and started within this sweep).
 */
async function sweepSibling(
  runtime: string,
  dead: DeadSibling,
  cgroups: CgroupSupport,
  log: Log,
): Promise<void> {
  const dir = join(runtime, '..', dead.id);
  let lock: DataDirLock | undefined = { release: () => Promise.resolve() };
  if (dead.dataDir !== undefined && existsSync(dead.dataDir)) {
    // A sweep is housekeeping: a data dir we may not lock (another user's) is left, not fatal.
    lock = await tryLockDataDir(dead.dataDir).catch((err: unknown) => {
      log('warn', 'left what a killed instance left: cannot lock its data dir', {
        instance: dead.id,
        err: err instanceof Error ? err.message : String(err),
      });
      return undefined;
    });
  }
  if (!lock) return;
  try {
    if (!deadSibling(runtime, dead.id) || runningRecords(join(dir, 'held')).length > 0) return;
    cgroups.removeInstance(dead.id);
    await rm(dir, { recursive: true, force: true });
    log('info', 'removed what a killed instance left', { instance: dead.id });
  } finally {
    await lock.release();
  }
}

/** The records under a held root whose sandbox still runs (same pid, same start time). */
function runningRecords(heldRoot: string): SandboxRecord[] {
  if (!existsSync(heldRoot)) return [];
  return heldIds(heldRoot).flatMap((id) => {
    const record = readRecord(join(heldRoot, id));
    return record && record.id === id && startTime(record.pid) === record.started ? [record] : [];
  });
}

/** Removes the instance's runtime dir once every sandbox is gone. */
export async function removeRuntimeDir(host: HostSetup): Promise<void> {
  await rm(host.dirs.runtime, { recursive: true, force: true });
}

export { readHostEnv };
