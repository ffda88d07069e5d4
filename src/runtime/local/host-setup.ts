import { accessSync, chmodSync, constants, mkdirSync, readdirSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { AGENT_SOCK } from '../../agent/protocol.js';
import { RuntimeError } from '../runtime.js';
import { bundleAgent } from './agent-bundle.js';
import { detectCgroups, type CgroupSupport } from './cgroups.js';
import { readHostEnv, sandboxOwner, writeEtcFiles, type HostEnv } from './host-env.js';
import type { SocketOwner } from './unix-listener.js';
import { warmupTarball } from './warmup-source.js';

/** Everything sandboxes share, prepared once at runtime start. */
export interface HostSetup {
  env: HostEnv;
  dirs: { runtime: string; sandboxes: string; etc: string; agent: string };
  cgroups: CgroupSupport;
  /** The host uid/gid sandboxes run as, when not our own. */
  owner: SocketOwner | undefined;
  ownerDetail: string;
  warmup: Buffer;
  hostname: string;
}

export function runtimeDirs(dataDir: string): HostSetup['dirs'] {
  // Absolute: bwrap binds these paths, and a relative dataDir ('./data') means nothing to it.
  const runtime = resolve(dataDir, 'runtime');
  return {
    runtime,
    sandboxes: resolve(dataDir, 'sandboxes'),
    etc: join(runtime, 'etc'),
    agent: join(runtime, 'agent.mjs'),
  };
}

/**
 * Checks bwrap, lays out `<dataDir>/runtime` and `<dataDir>/sandboxes`, bundles the agent, and
 * decides what sandboxes run as and which limits hold. Leftovers of a previous run are removed:
 * their sandboxes died with it (--die-with-parent).
 */
export async function prepareHost(
  dataDir: string,
  env: HostEnv,
  limits: { memoryBytes: number; pids: number },
  log: (msg: string, extra?: object) => void,
): Promise<HostSetup> {
  const dirs = runtimeDirs(dataDir);
  try {
    accessSync(env.bwrap, constants.X_OK);
  } catch (err) {
    throw new RuntimeError(`bubblewrap is not usable at ${env.bwrap}: ${String(err)}`, false);
  }
  for (const dir of [dirs.runtime, dirs.sandboxes]) {
    mkdirSync(dir, { recursive: true });
    // Searchable, not listable: bwrap, running as the sandbox uid, must reach what it binds.
    chmodSync(dir, 0o711);
  }
  for (const stale of readdirSync(dirs.sandboxes)) {
    rmSync(join(dirs.sandboxes, stale), { recursive: true, force: true });
  }
  const longest = join(dirs.sandboxes, 'x'.repeat(12), AGENT_SOCK);
  if (Buffer.byteLength(longest) > 107) {
    throw new RuntimeError(`dataDir is too long for unix socket paths (${longest})`, false);
  }
  await bundleAgent(dirs.agent);
  const hostname = 'slipway';
  writeEtcFiles(dirs.etc, hostname);
  const cgroups = detectCgroups(limits, log);
  let { owner, detail: ownerDetail } = sandboxOwner([dirs.sandboxes, dirs.agent, dirs.etc]);
  if (owner && cgroups.enforced && !env.setpriv) {
    owner = undefined;
    ownerDetail = 'sandboxes keep uid 0 (own user namespace, no capabilities): setpriv is missing';
  }
  return { env, dirs, cgroups, owner, ownerDetail, warmup: await warmupTarball(), hostname };
}

export { readHostEnv };
