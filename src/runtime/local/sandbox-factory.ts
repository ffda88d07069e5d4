import { randomBytes } from 'node:crypto';
import { chmodSync, chownSync, lstatSync, mkdirSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import {
  AGENT_SOCK,
  APP_SOCK,
  EGRESS_SOCK,
  SOURCES_SOCK,
  type Template,
} from '../../agent/protocol.js';
import type { SourceStore } from '../../sources/source-store.js';
import { RuntimeError } from '../runtime.js';
import { bwrapArgs } from './bwrap-args.js';
import type { Cgroup } from './cgroups.js';
import { openEgressDoor, type EgressDoor } from './egress-door.js';
import type { EgressLimits } from '../egress/egress-limits.js';
import type { HostSetup } from './host-setup.js';
import { LocalSandbox } from './sandbox.js';
import type { LaunchPlan } from './sandbox-process.js';
import { makeFifos } from './held-io.js';
import type { SandboxRecord } from './sandbox-record.js';
import { sandboxToken } from './sandbox-token.js';
import type { ArtifactStore } from './artifact-store.js';
import { openSourceDoor, type SourceDoor } from './source-door.js';
import type { SocketOwner } from './unix-listener.js';
import type { Log } from '../../logging.js';

export interface FactoryOptions {
  agentToken: string;
  sourceStore: SourceStore;
  /** Built trees of the general lane, served and stored through the source door. */
  artifacts?: ArtifactStore;
  /** The egress door starts closed (no hosts); the inject sets the app's rules. */
  egress: { allowPrivate: string[]; limits: EgressLimits };
  /** Cap on each of the sandbox's tmpfs mounts. */
  tmpfsBytes: number;
  log: Log;
}

/** sh joins the sandbox's cgroups as root, then execs the rest (setpriv, bwrap). */
const JOIN_CGROUPS =
  'n=$1; shift; while [ "$n" -gt 0 ]; do echo $$ > "$1" || exit 125; shift; n=$((n-1)); done; exec "$@"';

/**
 * Boots one sandbox of a template: its socket dir, its doors (source and egress: every socket of
 * ours exists before the sandbox does), cgroup and bwrap process.
 */
export async function bootSandbox(
  host: HostSetup,
  opts: FactoryOptions,
  template: Template,
): Promise<LocalSandbox> {
  const id = randomBytes(6).toString('hex');
  const dir = join(host.dirs.sandboxes, id);
  const heldDir = host.keep ? join(host.dirs.held, id) : undefined;
  const token = sandboxToken(opts.agentToken, id);
  let owner: SocketOwner | undefined;
  let cgroup: Cgroup | undefined;
  let door: SourceDoor | undefined;
  let egress: EgressDoor | undefined;
  // Filled in once claimed: egress lines name the app they are for.
  const context: { app?: string } = {};
  const log: Log = (level, msg, extra) =>
    opts.log(level, msg, { sandbox: id, ...context, ...extra });
  try {
    owner = host.users.acquire();
    if (heldDir) {
      mkdirSync(heldDir, { mode: 0o700 });
      await makeFifos(heldDir);
    }
    mkdirSync(dir, { mode: 0o700 });
    // The agent makes its sockets here at boot; the dir is taken back before any app code runs.
    if (owner) chownSync(dir, owner.uid, owner.gid);
    ({ door, egress } = await openDoors(host, opts, { dir, token, owner, allowedHosts: [], log }));
    cgroup = host.cgroups.create(`sb-${id}`);
  } catch (err) {
    await door?.close();
    await egress?.close();
    host.users.release(owner);
    for (const made of [dir, heldDir]) if (made) rmSync(made, { recursive: true, force: true });
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
    dieWithParent: !heldDir,
  });
  const python = host.env.python;
  const plan: LaunchPlan = {
    ...launcher(host, owner, cgroup),
    bwrapOptions: args.options,
    sandboxCommand: args.command,
    seccomp: host.seccomp,
    boot: { token, sandboxId: id, template, ...(python ? { python } : {}) },
  };
  return LocalSandbox.boot({
    id,
    template,
    dir,
    ...(heldDir ? { heldDir } : {}),
    token,
    owner,
    plan,
    cgroup,
    boots: host.boots,
    closers: [door.close, egress.close, async () => host.users.release(owner)],
    allowSource: door.allow,
    egress,
    context,
    afterBoot: () => lockDir(dir),
    routeLink: routeLinkOf(host, id),
    log: opts.log,
  });
}

/**
 * Takes back a sandbox a previous control plane left running, whose record the caller verified:
 * its doors open again on the same paths with its own token (the dir is ours, taken back at its
 * boot), with the egress rules its app runs with; its uid and cgroup are its own again.
 */
export async function adoptSandbox(
  host: HostSetup,
  opts: FactoryOptions,
  record: SandboxRecord,
): Promise<LocalSandbox> {
  const { id, token } = record;
  const dir = join(host.dirs.sandboxes, id);
  const heldDir = join(host.dirs.held, id);
  const context: { app?: string } = record.app ? { app: record.app } : {};
  const log: Log = (level, msg, extra) =>
    opts.log(level, msg, { sandbox: id, ...context, ...extra });
  const owner = host.users.take(record.owner);
  const { allowedHosts } = record;
  const { door, egress } = await openDoors(host, opts, { dir, token, owner, allowedHosts, log });
  return LocalSandbox.adopt(
    {
      id,
      template: record.template,
      dir,
      heldDir,
      token,
      owner,
      cgroup: host.cgroups.create(`sb-${id}`),
      boots: host.boots,
      closers: [door.close, egress.close, async () => host.users.release(owner)],
      allowSource: door.allow,
      egress,
      context,
      afterBoot: () => undefined,
      routeLink: routeLinkOf(host, id),
      log: opts.log,
    },
    record,
  );
}

/**
 * The host ends of a sandbox's sources.sock and egress.sock, in its socket dir: every socket of
 * ours exists before the sandbox does (or is made anew, at adoption, in a dir taken back).
 */
async function openDoors(
  host: HostSetup,
  opts: FactoryOptions,
  at: {
    dir: string;
    token: string;
    owner: SocketOwner | undefined;
    allowedHosts: string[];
    log: Log;
  },
): Promise<{ door: SourceDoor; egress: EgressDoor }> {
  const { dir, token, owner, log } = at;
  const door = await openSourceDoor({
    path: join(dir, SOURCES_SOCK),
    token,
    store: opts.sourceStore,
    warmup: host.warmup,
    ...(opts.artifacts ? { artifacts: opts.artifacts } : {}),
    owner,
    log,
  });
  try {
    const egress = await openEgressDoor({
      path: join(dir, EGRESS_SOCK),
      allowedHosts: at.allowedHosts,
      allowPrivate: opts.egress.allowPrivate,
      owner,
      limits: opts.egress.limits,
      log,
    });
    return { door, egress };
  } catch (err) {
    await door.close();
    throw err;
  }
}

const routeLinkOf = (host: HostSetup, id: string): string => join(host.dirs.routes, `${id}.sock`);

/** What the socket dir may hold once the agent listens: sockets, each made by its side. */
const DOORS = new Set([AGENT_SOCK, APP_SOCK, SOURCES_SOCK, EGRESS_SOCK]);

/**
 * The agent has made its sockets: take the dir back before any app code runs, so nothing in it
 * can be replaced (a symlinked app.sock would send visitors into a host socket) and nothing can
 * be written there (the host's disk). It stays searchable, so the sockets stay reachable. Without
 * root the sandbox shares our uid, so write permission is what takes it back.
 */
function lockDir(dir: string): void {
  chownSync(dir, process.getuid?.() ?? 0, process.getgid?.() ?? 0);
  chmodSync(dir, process.getuid?.() === 0 ? 0o711 : 0o511);
  for (const name of readdirSync(dir)) {
    if (!DOORS.has(name) || !lstatSync(join(dir, name)).isSocket()) {
      throw new Error(`unexpected ${name} in the sandbox's socket dir`);
    }
  }
}

/**
 * How bwrap is started. With a cgroup, a root `sh` first moves itself into it (so everything
 * bwrap forks is counted from the start), then drops to the sandbox uid with setpriv; without one,
 * bwrap is spawned as the sandbox uid directly. prepareHost made sure bwrap and setpriv exist.
 */
function launcher(
  host: HostSetup,
  owner: SocketOwner | undefined,
  cgroup: Cgroup | undefined,
): Pick<LaunchPlan, 'command' | 'spawnAs'> {
  const bwrap = host.env.bwrap as string;
  if (!cgroup) return { command: [bwrap], ...(owner ? { spawnAs: owner } : {}) };
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
