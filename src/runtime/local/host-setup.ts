import { readdirSync } from 'node:fs';
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
  deadSiblings,
  instanceId,
  isRoot,
  makePrivateDir,
  runtimeRoot,
} from './runtime-dir.js';
import { SandboxUsers, type UidRange } from './sandbox-users.js';
import { seccompProgram } from './seccomp.js';
import { warmupTarball } from './warmup-source.js';

/** Everything sandboxes share, prepared once at runtime start. */
export interface HostSetup {
  env: HostEnv;
  dirs: { runtime: string; sandboxes: string; etc: string; agent: string };
  cgroups: CgroupSupport;
  /** Hands out the host uid each sandbox runs as (ours when we are not root). */
  users: SandboxUsers;
  /** The BPF program bwrap loads before it execs the agent. */
  seccomp: Buffer;
  warmup: Buffer;
  hostname: string;
}

export interface HostOptions {
  dataDir: string;
  /** `runtime.dir`: the parent of this instance's runtime dir; a default when absent. */
  runtimeDir: string | undefined;
  uids: UidRange;
  limits: CgroupLimits;
}

/**
 * Checks bwrap, lays out this instance's runtime dir, bundles the agent, builds the seccomp
 * filter and decides which limits hold; removes what killed instances left. Sandboxes never run as host uid 0: as root each gets a uid
 * of its own, and a host where they could not reach what they bind refuses to start.
 * Leftovers of a previous run are removed: their sandboxes died with it (--die-with-parent).
 */
export async function prepareHost(
  opts: HostOptions,
  env: HostEnv,
  log: (msg: string, extra?: object) => void,
): Promise<HostSetup> {
  if (!env.bwrap) throw new RuntimeError('bubblewrap (bwrap) is not installed', false);
  const root = isRoot();
  if (root && !env.setpriv) {
    throw new RuntimeError('setpriv (util-linux) is needed to run sandboxes unprivileged', false);
  }
  const runtime = runtimeRoot(opts.dataDir, opts.runtimeDir);
  const dirs = {
    runtime,
    sandboxes: join(runtime, 'sandboxes'),
    etc: join(runtime, 'etc'),
    agent: join(runtime, 'agent.mjs'),
  };
  for (const dir of [dirs.runtime, dirs.sandboxes]) makePrivateDir(dir);
  checkReachable(dirs.sandboxes, 'runtime.dir');
  for (const binary of [env.node, ...(env.python ? [env.python] : [])]) {
    checkReachable(binary, 'the interpreter');
  }
  await Promise.all(
    readdirSync(dirs.sandboxes).map((stale) =>
      rm(join(dirs.sandboxes, stale), { recursive: true, force: true }),
    ),
  );
  const longest = join(dirs.sandboxes, 'x'.repeat(12), AGENT_SOCK);
  if (Buffer.byteLength(longest) > 107) {
    throw new RuntimeError(`runtime.dir is too long for unix socket paths (${longest})`, false);
  }
  await bundleAgent(dirs.agent);
  const hostname = 'slipway';
  writeEtcFiles(dirs.etc, hostname);
  claimRuntimeDir(dirs.runtime);
  const id = instanceId(opts.dataDir);
  const cgroups = detectCgroups(opts.limits, id, log);
  // Instances of other data dirs that were killed: their sandboxes died with them, the rest is ours.
  for (const dead of deadSiblings(dirs.runtime)) {
    cgroups.removeInstance(dead);
    await rm(join(dirs.runtime, '..', dead), { recursive: true, force: true });
    log('removed what a killed instance left', { instance: dead });
  }
  const users = new SandboxUsers(root ? opts.uids : undefined, parseInt(id.slice(0, 8), 16));
  return {
    env,
    dirs,
    cgroups,
    users,
    seccomp: seccompProgram(),
    warmup: await warmupTarball(),
    hostname,
  };
}

/** Removes the instance's runtime dir once every sandbox is gone. */
export async function removeRuntimeDir(host: HostSetup): Promise<void> {
  await rm(host.dirs.runtime, { recursive: true, force: true });
}

export { readHostEnv };
