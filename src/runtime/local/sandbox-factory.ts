import { randomBytes } from 'node:crypto';
import { chmodSync, chownSync, mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { SOURCES_SOCK, type Template } from '../../agent/protocol.js';
import type { SourceStore } from '../../sources/source-store.js';
import { RuntimeError } from '../runtime.js';
import { bwrapArgs } from './bwrap-args.js';
import type { Cgroup } from './cgroups.js';
import type { HostSetup } from './host-setup.js';
import { LocalSandbox } from './sandbox.js';
import type { LaunchPlan } from './sandbox-process.js';
import { sandboxToken } from './sandbox-token.js';
import { openSourceDoor, type SourceDoor } from './source-door.js';

export interface FactoryOptions {
  agentToken: string;
  sourceStore: SourceStore;
  /** Cap on each of the sandbox's tmpfs mounts. */
  tmpfsBytes: number;
  log: (msg: string, extra?: object) => void;
}

const BOOT_TIMEOUT_MS = 15_000;
/** sh joins the sandbox's cgroups as root, then execs the rest (setpriv, bwrap). */
const JOIN_CGROUPS =
  'n=$1; shift; while [ "$n" -gt 0 ]; do echo $$ > "$1" || exit 125; shift; n=$((n-1)); done; exec "$@"';

/** Boots one sandbox of a template: its socket dir, source door, cgroup and bwrap process. */
export async function bootSandbox(
  host: HostSetup,
  opts: FactoryOptions,
  template: Template,
): Promise<LocalSandbox> {
  const id = randomBytes(6).toString('hex');
  const dir = join(host.dirs.sandboxes, id);
  mkdirSync(dir, { mode: 0o700 });
  if (host.owner) chownSync(dir, host.owner.uid, host.owner.gid);
  const token = sandboxToken(opts.agentToken, id);
  let cgroup: Cgroup | undefined;
  let door: SourceDoor | undefined;
  try {
    door = await openSourceDoor({
      path: join(dir, SOURCES_SOCK),
      token,
      store: opts.sourceStore,
      warmup: host.warmup,
      owner: host.owner,
      log: (msg, extra) => opts.log(msg, { sandbox: id, ...extra }),
    });
    cgroup = host.cgroups.create(`sb-${id}`);
  } catch (err) {
    await door?.close();
    rmSync(dir, { recursive: true, force: true });
    throw new RuntimeError(`cannot prepare a sandbox: ${String(err)}`, true);
  }
  const args = bwrapArgs({
    socketDir: dir,
    agentFile: host.dirs.agent,
    etcDir: host.dirs.etc,
    node: host.env.node,
    systemDirs: host.env.systemDirs,
    extraReadOnly: host.env.extraReadOnly,
    hostname: host.hostname,
    tmpfsBytes: opts.tmpfsBytes,
  });
  const python = host.env.python;
  const plan: LaunchPlan = {
    ...launcher(host, cgroup),
    bwrapOptions: args.options,
    sandboxCommand: args.command,
    boot: { token, sandboxId: id, template, ...(python ? { python } : {}) },
  };
  return LocalSandbox.boot({
    id,
    template,
    dir,
    token,
    plan,
    cgroup,
    bootTimeoutMs: BOOT_TIMEOUT_MS,
    closers: [door.close],
    allowSource: door.allow,
    // The agent has made its sockets: take the dir back, so the app cannot fill the host's disk
    // through it (it stays searchable, so the sockets stay reachable).
    afterBoot: host.owner ? () => lockDir(dir) : undefined,
    log: opts.log,
  });
}

function lockDir(dir: string): void {
  chownSync(dir, process.getuid?.() ?? 0, process.getgid?.() ?? 0);
  chmodSync(dir, 0o711);
}

/**
 * How bwrap is started. With a cgroup, a root `sh` first moves itself into it (so everything
 * bwrap forks is counted from the start), then drops to the sandbox uid with setpriv; without one,
 * bwrap is spawned as the sandbox uid directly.
 */
function launcher(
  host: HostSetup,
  cgroup: Cgroup | undefined,
): Pick<LaunchPlan, 'command' | 'spawnAs'> {
  const bwrap = host.env.bwrap;
  if (!cgroup) return { command: [bwrap], ...(host.owner ? { spawnAs: host.owner } : {}) };
  const { owner } = host;
  const drop =
    owner && host.env.setpriv
      ? [host.env.setpriv, `--reuid=${owner.uid}`, `--regid=${owner.gid}`, '--clear-groups', '--']
      : [];
  const files = cgroup.procsFiles;
  return {
    command: [
      '/bin/sh',
      '-c',
      JOIN_CGROUPS,
      'slipway-launch',
      String(files.length),
      ...files,
      ...drop,
      bwrap,
    ],
  };
}
