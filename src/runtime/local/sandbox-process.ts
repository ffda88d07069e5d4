import { spawn, type StdioOptions } from 'node:child_process';
import type { Readable, Writable } from 'node:stream';
import { ARGS_FD, DIAG_FD, type BootMessage, type Diag } from '../../agent/protocol.js';
import { SECCOMP_FD } from './bwrap-args.js';
import { closeFds, openReaders, openWriters, type HeldStream } from './held-io.js';
import { LineSplitter } from '../../io/output-lines.js';

export interface LaunchPlan {
  /** argv up to and including bwrap: possibly `sh` (joins the cgroup) and `setpriv` before it. */
  command: string[];
  /** For a launch without `sh`: spawn straight as the sandbox uid. */
  spawnAs?: { uid: number; gid: number };
  /** bwrap's options, fed through ARGS_FD. */
  bwrapOptions: string[];
  /** What bwrap runs: bwrap takes the command from argv only. */
  sandboxCommand: string[];
  /** The BPF program bwrap reads from SECCOMP_FD. */
  seccomp: Buffer;
  boot: BootMessage;
}

export interface ProcessEvents {
  /** A line the sandbox wrote on fd 1 or 2 (the app's, once it runs). */
  output(stream: 'stdout' | 'stderr', text: string): void;
  /** A message on the agent's diagnostics fd. */
  diag(message: Diag): void;
  /** The whole tree is gone and every pipe is drained. */
  close(code: number | null, signal: NodeJS.Signals | null): void;
}

/** The whole environment of the launcher, bwrap and its pid 1: nothing of ours, no secret. */
export const LAUNCH_ENV = { PATH: '/usr/sbin:/usr/bin:/sbin:/bin' };

/** A sandbox's outermost process (bwrap, or the launcher that becomes it). */
export interface SandboxProcess {
  readonly pid: number | undefined;
  /** Stops reading its streams, without hearing that as its end: it runs on without us. */
  detach(): void;
}

/**
 * Starts one sandbox process. bwrap takes its argv through ARGS_FD and its seccomp filter through
 * SECCOMP_FD; the agent's boot message, token included, goes in on stdin and the pipe is closed
 * behind it. The launcher gets an explicit minimal environment: bwrap's pid 1 inside the sandbox
 * keeps the environment bwrap started with, and the app can read it there.
 *
 * With `heldDir`, fds 1, 2 and DIAG_FD are the FIFOs there (held-io.ts) and the sandbox runs in a
 * session of its own: it outlives this process, and `attachSandbox` picks its streams up again.
 * Without, they are pipes to us, and the sandbox ends with us.
 */
export function launchSandbox(
  plan: LaunchPlan,
  events: ProcessEvents,
  heldDir?: string,
): SandboxProcess {
  const [file, ...launcherArgs] = plan.command;
  if (file === undefined) throw new Error('empty launch command');
  const writers = heldDir ? openWriters(heldDir) : undefined;
  const stdio: StdioOptions = writers
    ? ['pipe', writers.out, writers.err, 'pipe', writers.diag, 'pipe']
    : ['pipe', 'pipe', 'pipe', 'pipe', 'pipe', 'pipe'];
  let child;
  try {
    child = spawn(
      file,
      [...launcherArgs, '--args', String(ARGS_FD), '--', ...plan.sandboxCommand],
      {
        stdio,
        env: LAUNCH_ENV,
        // Not our working dir: a shell in the launcher would export it as PWD to bwrap's init.
        cwd: '/',
        detached: writers !== undefined,
        ...(plan.spawnAs ?? {}),
      },
    );
  } finally {
    // The sandbox has its copies now: ours would keep its streams open after it ended.
    if (writers) closeFds(writers);
  }
  const pipe = (index: number) => child.stdio[index] as (Readable & Writable) | null;
  const streams = heldDir
    ? openReaders(heldDir)
    : { out: pipe(1) as Readable, err: pipe(2) as Readable, diag: pipe(DIAG_FD) as Readable };
  // EPIPE when bwrap dies at once: worth a line, the close with its stderr tells the rest.
  for (const index of [0, ARGS_FD, SECCOMP_FD]) {
    pipe(index)?.on('error', (err) =>
      events.diag({
        t: 'log',
        level: 'warn',
        msg: `sandbox fd ${index} write failed: ${err.message}`,
      }),
    );
  }
  child.on('error', (err) =>
    events.diag({ t: 'log', level: 'error', msg: `cannot start sandbox: ${err.message}` }),
  );
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('close', (code, signal) => resolve({ code, signal })),
  );
  const reading = readStreams(streams, events);
  void Promise.all([exited, reading.ended]).then(([end]) => {
    if (!reading.detached) events.close(end.code, end.signal);
  });
  if (heldDir) child.unref();
  pipe(ARGS_FD)?.end(plan.bwrapOptions.map((a) => `${a}\0`).join(''));
  pipe(SECCOMP_FD)?.end(plan.seccomp);
  pipe(0)?.end(`${JSON.stringify(plan.boot)}\n`);
  return { pid: child.pid, detach: () => reading.detach() };
}

/**
 * Picks up a sandbox a previous control plane launched with held streams: its output and
 * diagnostics from where they stopped, its end from the end of all three (it is not our child, so
 * its exit code is not ours to see: the agent's exit report says how the app ended).
 */
export function attachSandbox(pid: number, heldDir: string, events: ProcessEvents): SandboxProcess {
  const reading = readStreams(openReaders(heldDir), events);
  void reading.ended.then(() => {
    if (!reading.detached) events.close(null, null);
  });
  return { pid, detach: () => reading.detach() };
}

interface Reading {
  /** Resolves once every stream has ended (or was let go). */
  ended: Promise<unknown>;
  detached: boolean;
  detach(): void;
}

/** Lines of fds 1/2 and diagnostics to `events`, until every stream ends. */
function readStreams(streams: Record<HeldStream, Readable>, events: ProcessEvents): Reading {
  const ends: Promise<void>[] = [];
  for (const [name, stream] of [
    ['out', 'stdout'],
    ['err', 'stderr'],
  ] as const) {
    const splitter = new LineSplitter((text) => events.output(stream, text));
    ends.push(
      drain(
        streams[name],
        (chunk) => splitter.push(chunk),
        () => splitter.flush(),
      ),
    );
  }
  const diagLines = new LineSplitter((line) => {
    const message = parseDiag(line);
    if (message) events.diag(message);
    else
      events.diag({ t: 'log', level: 'warn', msg: 'unreadable agent diagnostic', extra: { line } });
  });
  ends.push(
    drain(
      streams.diag,
      (chunk) => diagLines.push(chunk),
      () => diagLines.flush(),
    ),
  );
  const reading: Reading = {
    ended: Promise.all(ends),
    detached: false,
    detach() {
      reading.detached = true;
      for (const stream of Object.values(streams)) stream.destroy();
    },
  };
  return reading;
}

function drain(stream: Readable, data: (chunk: Buffer) => void, end: () => void): Promise<void> {
  return new Promise((resolve) => {
    stream.on('data', data);
    stream.once('close', () => {
      end();
      resolve();
    });
    stream.on('error', () => stream.destroy());
  });
}

/** The agent's diagnostics are trusted no more than the app is: a node app shares its process. */
function parseDiag(line: string): Diag | undefined {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    // Not JSON: the caller reports the raw line as unreadable.
    return undefined;
  }
  if (typeof value !== 'object' || value === null) return undefined;
  const v = value as Record<string, unknown>;
  if (v.t === 'ready' && typeof v.ms === 'number') return { t: 'ready', ms: v.ms };
  if (v.t === 'exit') {
    return {
      t: 'exit',
      code: typeof v.code === 'number' ? v.code : null,
      signal: typeof v.signal === 'string' ? v.signal : null,
      lastLines: Array.isArray(v.lastLines)
        ? v.lastLines.filter((l): l is string => typeof l === 'string').slice(-20)
        : [],
    };
  }
  if (v.t === 'log' && typeof v.msg === 'string') {
    const level = v.level === 'error' || v.level === 'warn' ? v.level : 'info';
    const extra =
      typeof v.extra === 'object' && v.extra !== null
        ? (v.extra as Record<string, unknown>)
        : undefined;
    return extra
      ? { t: 'log', level, msg: v.msg.slice(0, 2000), extra }
      : { t: 'log', level, msg: v.msg.slice(0, 2000) };
  }
  return undefined;
}
