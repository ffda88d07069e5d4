import { APP_DIR, SOCKET_DIR } from '../../agent/protocol.js';
import { SANDBOX_UID } from './host-env.js';

export interface SandboxLayout {
  /** Host dir holding only this sandbox's unix sockets; appears at /run/slipway. */
  socketDir: string;
  /** The bundled agent on the host; appears read-only at AGENT_PATH. */
  agentFile: string;
  /** Host dir with the sandbox's hosts, passwd, group and nsswitch.conf. */
  etcDir: string;
  node: string;
  systemDirs: { path: string; symlinkTo?: string }[];
  extraReadOnly: string[];
  hostname: string;
  /** Cap on each of /app and /tmp (tmpfs is memory). */
  tmpfsBytes: number;
  /** False for a sandbox that is to outlive this process (the next start adopts it). */
  dieWithParent: boolean;
}

export const AGENT_PATH = '/opt/slipway/agent.mjs';
/** bwrap reads the seccomp program from this fd (after ARGS_FD and DIAG_FD). */
export const SECCOMP_FD = 5;

/** Read-only pieces of /etc that TLS clients and the dynamic linker need; never /etc wholesale. */
const ETC_READ_ONLY = ['/etc/ssl', '/etc/ca-certificates', '/etc/alternatives', '/etc/ld.so.cache'];

/**
 * The bwrap options of one sandbox (passed through `--args`, so no host path shows in the
 * sandbox's /proc/1/cmdline), and the command it runs. Own user, pid, ipc, uts, cgroup and network
 * namespaces (loopback only), no nested user namespaces, the seccomp filter, no capabilities, an
 * empty environment, read-only system dirs and root, and size-limited tmpfs /app, /tmp and
 * /dev/shm as the only writable paths (the socket dir is taken back once the agent listens).
 */
export function bwrapArgs(layout: SandboxLayout): { options: string[]; command: string[] } {
  const args = [
    '--unshare-all',
    // --unshare-all only tries the user namespace; --disable-userns needs it for sure.
    '--unshare-user',
    '--disable-userns',
    '--uid',
    String(SANDBOX_UID),
    '--gid',
    String(SANDBOX_UID),
    '--seccomp',
    String(SECCOMP_FD),
    ...(layout.dieWithParent ? ['--die-with-parent'] : []),
    '--new-session',
    '--cap-drop',
    'ALL',
    '--clearenv',
    ...['PATH', '/usr/local/bin:/usr/bin:/bin', 'HOME', '/tmp', 'LANG', 'C.UTF-8'].flatMap(
      (v, i, all) => (i % 2 === 0 ? ['--setenv', v, all[i + 1] as string] : []),
    ),
    '--ro-bind',
    '/usr',
    '/usr',
  ];
  for (const dir of layout.systemDirs) {
    if (dir.symlinkTo !== undefined) args.push('--symlink', dir.symlinkTo, dir.path);
    else args.push('--ro-bind', dir.path, dir.path);
  }
  for (const path of ETC_READ_ONLY) args.push('--ro-bind-try', path, path);
  for (const name of ['hosts', 'passwd', 'group', 'nsswitch.conf']) {
    args.push('--ro-bind', `${layout.etcDir}/${name}`, `/etc/${name}`);
  }
  for (const path of layout.extraReadOnly) args.push('--ro-bind', path, path);
  args.push(
    '--ro-bind',
    layout.agentFile,
    AGENT_PATH,
    '--dev',
    '/dev',
    '--size',
    String(layout.tmpfsBytes),
    '--tmpfs',
    '/dev/shm',
    '--size',
    String(layout.tmpfsBytes),
    '--tmpfs',
    APP_DIR,
    '--size',
    String(layout.tmpfsBytes),
    '--tmpfs',
    '/tmp',
    '--bind',
    layout.socketDir,
    SOCKET_DIR,
    '--hostname',
    layout.hostname,
    // bwrap 0.8: the pid namespace and its /proc must come after the filesystem binds.
    '--unshare-pid',
    '--proc',
    '/proc',
    // Last: bwrap's root and /dev are tmpfs mounts of no fixed size, so neither stays writable.
    '--remount-ro',
    '/dev',
    '--remount-ro',
    '/',
    '--chdir',
    APP_DIR,
  );
  return { options: args, command: [layout.node, AGENT_PATH] };
}
