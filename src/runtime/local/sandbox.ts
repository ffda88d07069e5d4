import { rm } from 'node:fs/promises';
import net from 'node:net';
import { join } from 'node:path';
import {
  AGENT_SOCK,
  APP_SOCK,
  EXIT_LINES,
  type Diag,
  type ExitReport,
} from '../../agent/protocol.js';
import { NOTE_PREFIX, RuntimeError, type AppExit, type LogLine, type Sandbox } from '../runtime.js';
import { agentLink, callAgent } from './agent-client.js';
import type { Cgroup } from './cgroups.js';
import { DiagLimiter } from './diag-limiter.js';
import type { EgressDoor } from './egress-door.js';
import { appExit } from './exit-report.js';
import { Recent } from '../../io/output-lines.js';
import { PinnedSocket } from './pinned-socket.js';
import { linkAppSocket } from './route-link.js';
import { startTime } from './process-tree.js';
import {
  attachSandbox,
  launchSandbox,
  type LaunchPlan,
  type ProcessEvents,
  type SandboxProcess,
} from './sandbox-process.js';
import { writeRecord, type SandboxRecord } from './sandbox-record.js';
import { killTree, removeCgroup } from './teardown.js';
import type { BootBudget } from './boot-budget.js';
import type { SocketOwner } from './unix-listener.js';
import type { ArtifactGrant } from './source-door.js';
import type { Log } from '../../logging.js';

export type Phase = 'booting' | 'idle' | 'claimed' | 'injecting' | 'running' | 'failed' | 'gone';
export type End = { code: number | null; signal: string | null };

export interface SandboxSetup {
  id: string;
  template: string;
  /** Host dir with the sandbox's sockets (bound at /run/slipway). */
  dir: string;
  token: string;
  /** The host uid/gid this sandbox runs as (undefined: ours, when we are not root). */
  owner: SocketOwner | undefined;
  /** How to launch it; an adopted sandbox has none (it runs already). */
  plan?: LaunchPlan;
  /**
   * Where its streams and record are held when it is to outlive this process (held-io.ts);
   * without one it is launched to end with us.
   */
  heldDir?: string;
  cgroup: Cgroup | undefined;
  /** How long the agent gets to be ready; told how long it took. */
  boots: BootBudget;
  /** Doors and other host-side resources closed when the sandbox goes. */
  closers: (() => Promise<void>)[];
  /** Lets the sandbox fetch this one source key (its inject's), and its one artifact grant. */
  allowSource(key: string, artifact?: ArtifactGrant): void;
  /** The host end of egress.sock, refusing everything until the inject sets the app's rules. */
  egress: EgressDoor;
  /** What the sandbox's host log lines say about it beyond its id: the app, once claimed. */
  context: { app?: string };
  /** Runs once the agent is ready (its sockets exist): takes the socket dir back. */
  afterBoot: () => void;
  /** Where the app socket is linked for the native front door (route-link.ts), if anywhere. */
  routeLink?: string;
  log: Log;
}

/**
 * One bwrap sandbox: its process tree, its output and its end. Lines on fds 1/2 are the app's once
 * an inject began (before that only bwrap, or a broken agent, writes there); the agent's own words
 * arrive on its diagnostics fd and go to the host log.
 */
export class LocalSandbox implements Sandbox {
  readonly id: string;
  readonly template: string;
  readonly dir: string;
  readonly token: string;
  readonly owner: SocketOwner | undefined;
  phase: Phase = 'booting';
  /** Its connections to the agent's control API, one kept open for the next call. */
  readonly link = agentLink();
  /** Resolves when the whole tree is gone and its pipes are drained. */
  readonly closed: Promise<End>;
  private readonly process: SandboxProcess;
  private readonly recent = new Recent<string>(EXIT_LINES);
  private readonly bootOutput = new Recent<string>(EXIT_LINES);
  private readonly exitListeners: ((exit: AppExit) => void)[] = [];
  private readonly logListeners: ((line: LogLine) => void)[] = [];
  private readonly diagLimit = new DiagLimiter((dropped) =>
    this.setup.log('info', 'agent diagnostics over their cap, dropped', {
      sandbox: this.id,
      lines: dropped.lines,
      bytes: dropped.bytes,
    }),
  );
  /** The agent's two sockets, pinned once it booted and before any app code ran. */
  private agentSock: PinnedSocket | undefined;
  private appSock: PinnedSocket | undefined;
  private appLink: string | undefined;
  private agentExit: ExitReport | undefined;
  /** From the inject on, fds 1/2 carry the app's output. */
  private injected = false;
  private ended = false;
  private reaping: Promise<void> | undefined;
  private ready: { resolve(): void; reject(err: Error): void } | undefined;

  /** What the record says it runs (adoption), kept current as it is claimed and injected. */
  private facts: Pick<SandboxRecord, 'app' | 'version' | 'allowedHosts'> = { allowedHosts: [] };
  private started = '';

  private constructor(
    private readonly setup: SandboxSetup,
    start: (events: ProcessEvents) => SandboxProcess,
  ) {
    this.id = setup.id;
    this.template = setup.template;
    this.dir = setup.dir;
    this.token = setup.token;
    this.owner = setup.owner;
    let onClosed: (end: End) => void = () => undefined;
    this.closed = new Promise((resolve) => (onClosed = resolve));
    this.process = start({
      output: (stream, text) => this.onOutput(stream, text),
      diag: (message) => this.onDiag(message),
      close: (code, sig) => {
        this.ended = true;
        this.diagLimit.close();
        onClosed({ code, signal: sig });
        this.onClose();
      },
    });
  }

  /** Spawns the sandbox and resolves once its agent is listening and warm. */
  static async boot(setup: SandboxSetup): Promise<LocalSandbox> {
    const { plan } = setup;
    if (!plan) throw new RuntimeError(`sandbox ${setup.id} has no launch plan`, false);
    const sandbox = new LocalSandbox(setup, (events) => launchSandbox(plan, events, setup.heldDir));
    sandbox.started = sandbox.pid === undefined ? '' : startTime(sandbox.pid);
    const ready = new Promise<void>((resolve, reject) => (sandbox.ready = { resolve, reject }));
    const begun = performance.now();
    const budget = setup.boots.ms;
    const timer = setTimeout(
      () => sandbox.ready?.reject(new Error(`agent not ready within ${budget} ms`)),
      budget,
    );
    try {
      await ready;
      setup.boots.record(performance.now() - begun);
      setup.afterBoot();
      sandbox.agentSock = new PinnedSocket(join(setup.dir, AGENT_SOCK));
      sandbox.pinAppSocket();
      sandbox.phase = 'idle';
      sandbox.record();
      sandbox.openLink();
      return sandbox;
    } catch (err) {
      await sandbox.reap();
      const output = sandbox.bootOutput.list().join('\n');
      const why = `${(err as Error).message}${output ? `: ${output}` : ''}`;
      throw new RuntimeError(`sandbox failed to boot: ${why}`, true);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Opens the connection its inject will use, while it waits in the pool. */
  private openLink(): void {
    const at = this.agentPath;
    callAgent(at, this.token, 'GET', '/status', { timeoutMs: 5_000, link: this.link }).catch(
      (err: unknown) =>
        // The inject then opens a connection of its own.
        this.setup.log('info', 'agent link not opened', { sandbox: this.id, error: String(err) }),
    );
  }

  /** Pins the agent's app socket, and links it where the native front door can reach it. */
  private pinAppSocket(): void {
    const entry = join(this.setup.dir, APP_SOCK);
    this.appSock = new PinnedSocket(entry);
    const link = this.setup.routeLink;
    if (link !== undefined) this.appLink = linkAppSocket(this.appSock, entry, link);
  }

  /** The app it was claimed for: egress and other host log lines name it. */
  get appId(): string | undefined {
    return this.setup.context.app;
  }

  set appId(app: string | undefined) {
    this.setup.context.app = app;
  }

  /**
   * Takes back a sandbox a previous control plane left running (the caller verified who it is):
   * its streams from the held FIFOs, its sockets pinned again. The socket dir was taken back
   * before any app code ran, so its entries are still the agent's own.
   */
  static adopt(setup: SandboxSetup & { heldDir: string }, record: SandboxRecord): LocalSandbox {
    const sandbox = new LocalSandbox(setup, (events) =>
      attachSandbox(record.pid, setup.heldDir, events),
    );
    sandbox.started = record.started;
    sandbox.facts = { app: record.app, version: record.version, allowedHosts: record.allowedHosts };
    sandbox.appId = record.app;
    sandbox.injected = true;
    sandbox.agentSock = new PinnedSocket(join(setup.dir, AGENT_SOCK));
    sandbox.pinAppSocket();
    sandbox.phase = 'running';
    return sandbox;
  }

  /** The version its record says it runs (undefined before an inject succeeded). */
  get adoptedVersion(): number | undefined {
    return this.facts.version;
  }

  /** An app runs in it (its inject succeeded, or it was adopted running one). */
  get runsApp(): boolean {
    return this.alive && this.phase === 'running' && this.facts.app !== undefined;
  }

  /** Its app started: the record says which app and version it serves, for the next start. */
  serves(app: string, version: number, allowedHosts: string[]): void {
    this.facts = { app, version, allowedHosts };
    this.record();
  }

  private record(): void {
    const { heldDir } = this.setup;
    const pid = this.pid;
    if (!heldDir || pid === undefined || this.phase === 'gone') return;
    try {
      writeRecord(heldDir, {
        v: 1,
        id: this.id,
        template: this.template,
        pid,
        started: this.started,
        token: this.token,
        ...(this.owner ? { owner: this.owner } : {}),
        ...this.facts,
      });
    } catch (err) {
      // Without a record the next start reaps this sandbox instead of adopting it: no harm done.
      this.setup.log('info', 'sandbox record not written', {
        sandbox: this.id,
        error: String(err),
      });
    }
  }

  /** The host end of its egress.sock. */
  get egress(): EgressDoor {
    return this.setup.egress;
  }

  get pid(): number | undefined {
    return this.process.pid;
  }

  get alive(): boolean {
    return !this.ended;
  }

  /** The app socket's link for a proxy outside this process, when the host makes one. */
  get socketPath(): string | undefined {
    return this.appLink;
  }

  connect(): net.Socket {
    if (!this.appSock) throw new RuntimeError(`sandbox ${this.id} has not booted`, false);
    return net.connect(this.appSock.path);
  }

  /** Where to reach the agent's control API (the pinned `agent.sock`). */
  get agentPath(): string {
    if (!this.agentSock) throw new RuntimeError(`sandbox ${this.id} has not booted`, false);
    return this.agentSock.path;
  }

  onExit(listener: (exit: AppExit) => void): void {
    this.exitListeners.push(listener);
  }

  onLog(listener: (line: LogLine) => void): void {
    this.logListeners.push(listener);
  }

  /** Writes one of Slipway's own lines (`[slipway] …`) into the app's log. */
  note(text: string): void {
    const line: LogLine = {
      time: new Date().toISOString(),
      stream: 'system',
      text: NOTE_PREFIX + text,
    };
    this.notify(this.logListeners, line, 'log');
  }

  /** The inject begins: from now on what the sandbox prints is the app's. */
  beginInject(): void {
    this.phase = 'injecting';
    this.injected = true;
  }

  allowSource(key: string, artifact?: ArtifactGrant): void {
    this.setup.allowSource(key, artifact);
  }

  exitReport(end: End): AppExit {
    return appExit(this.agentExit, end, this.recent.list());
  }

  /** Kills the whole tree and removes every host-side trace; idempotent. */
  reap(): Promise<void> {
    this.reaping ??= this.kill().then(() => this.cleanup());
    return this.reaping;
  }

  private async kill(): Promise<void> {
    const graceful = this.phase === 'running' || this.phase === 'injecting';
    this.phase = 'gone';
    const pid = this.process.pid;
    if (this.ended || pid === undefined) return;
    const closed = await killTree({
      pid,
      graceful,
      cgroup: this.setup.cgroup,
      closed: this.closed,
      isClosed: () => this.ended,
    });
    if (!closed)
      this.setup.log('info', 'sandbox did not close after SIGKILL', { sandbox: this.id, pid });
  }

  private async cleanup(): Promise<void> {
    this.link.destroy();
    this.agentSock?.close();
    this.appSock?.close();
    for (const close of this.setup.closers.splice(0)) {
      await close().catch((err: unknown) =>
        this.setup.log('info', 'sandbox door close failed', {
          sandbox: this.id,
          error: String(err),
        }),
      );
    }
    await removeCgroup(this.setup.cgroup, (level, msg, extra) =>
      this.setup.log(level, msg, { sandbox: this.id, ...extra }),
    );
    if (this.appLink !== undefined) await rm(this.appLink, { force: true });
    this.appLink = undefined;
    // Async: whatever the sandbox left in its dir, removing it never blocks the event loop.
    for (const dir of [this.dir, this.setup.heldDir]) {
      if (dir === undefined) continue;
      await rm(dir, { recursive: true, force: true }).catch((err: unknown) =>
        this.setup.log('info', 'sandbox dir not removed', { sandbox: this.id, error: String(err) }),
      );
    }
  }

  /**
   * Lets go of a running sandbox without stopping it (this control plane stops, the next one
   * adopts it): our ends of its sockets and doors close, the sandbox and its files stay.
   */
  async release(): Promise<void> {
    this.link.destroy();
    this.agentSock?.close();
    this.appSock?.close();
    this.process.detach();
    for (const close of this.setup.closers.splice(0)) {
      await close().catch((err: unknown) =>
        this.setup.log('info', 'sandbox door close failed', {
          sandbox: this.id,
          error: String(err),
        }),
      );
    }
  }

  private onOutput(stream: 'stdout' | 'stderr', text: string): void {
    if (!this.injected) {
      // bwrap's or a broken agent's words: a failed boot reports them, otherwise they are odd.
      this.bootOutput.push(text);
      if (this.phase !== 'booting') {
        this.setup.log('info', 'sandbox output outside an app', { sandbox: this.id, stream, text });
      }
      return;
    }
    this.recent.push(text);
    const line: LogLine = { time: new Date().toISOString(), stream, text };
    this.notify(this.logListeners, line, 'log');
  }

  private onDiag(message: Diag): void {
    if (message.t === 'ready') this.ready?.resolve();
    else if (message.t === 'exit') this.agentExit ??= message;
    else {
      const size = Buffer.byteLength(message.msg) + jsonBytes(message.extra);
      if (!this.diagLimit.take(size)) return;
      // The agent's fields go under their own key: none may pose as ours (sandbox, app, level).
      this.setup.log('info', `agent: ${message.msg}`, {
        ...(message.extra ? { agent: message.extra } : {}),
        sandbox: this.id,
        level: message.level,
      });
    }
  }

  private onClose(): void {
    this.ready?.reject(new Error('sandbox exited during boot'));
    if (this.phase === 'booting') return; // boot() reaps
    const appEnded = this.phase === 'running';
    // Died idle, claimed or mid-inject (the inject reports that): only the cleanup is ours.
    this.closed
      .then((end) => {
        if (appEnded) this.notify(this.exitListeners, this.exitReport(end), 'exit');
        return this.reap();
      })
      .catch((err: unknown) =>
        this.setup.log('info', 'sandbox cleanup failed', { sandbox: this.id, error: String(err) }),
      );
  }

  private notify<T>(listeners: ((value: T) => void)[], value: T, what: string): void {
    for (const listener of listeners) {
      try {
        listener(value);
      } catch (err) {
        this.setup.log('info', `${what} listener threw`, { sandbox: this.id, error: String(err) });
      }
    }
  }
}

function jsonBytes(value: unknown): number {
  return value === undefined ? 0 : Buffer.byteLength(JSON.stringify(value));
}
