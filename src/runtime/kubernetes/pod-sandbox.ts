import net from 'node:net';
import { EXIT_LINES, type ExitReport } from '../../agent/protocol.js';
import { POD_PORTS } from '../../agent/pod-settings.js';
import type { PodEvent } from '../../agent/pod-events.js';
import type { EgressRules } from '../egress/egress-rules.js';
import type { AppExit, LogLine, Sandbox } from '../runtime.js';
import { openEvents, type AgentAddress } from './agent-client.js';

/** A claimed pod: its agent's control port, its app port, and the events it streams. */
export class PodSandbox implements Sandbox {
  readonly control: AgentAddress;
  readonly address: AgentAddress;
  phase: 'claimed' | 'injecting' | 'running' | 'failed' | 'gone' = 'claimed';
  private readonly exitListeners: ((exit: AppExit) => void)[] = [];
  private readonly logListeners: ((line: LogLine) => void)[] = [];
  private readonly activityListeners: (() => void)[] = [];
  private readonly recent: string[] = [];
  private exit: AppExit | undefined;
  private stream: { close(): void } | undefined;

  constructor(
    /** The SandboxClaim's name. */
    readonly id: string,
    readonly template: string,
    readonly podIP: string,
    readonly token: string,
    /** What this pod's app may reach through the egress gate, and the gate itself. */
    readonly egress: { rules: EgressRules; gate: net.Server },
  ) {
    this.control = { host: podIP, port: POD_PORTS.agent };
    this.address = { host: podIP, port: POD_PORTS.public };
  }

  /** Subscribes to the agent's events; from here on its lines and exit reach the listeners. */
  async follow(): Promise<void> {
    this.stream = await openEvents(
      this.control,
      this.token,
      (event) => this.onEvent(event as PodEvent),
      (err) => {
        // The stream ends with the pod: an app that never said goodbye is gone all the same.
        if (this.phase !== 'gone') {
          const why = err ? `: ${err.message}` : '';
          this.ended({
            code: null,
            signal: null,
            lastLines: [...this.recent, `[slipway] the sandbox pod went away${why}`],
          });
        }
      },
    );
  }

  connect(): net.Socket {
    return net.connect({ host: this.podIP, port: POD_PORTS.public, noDelay: true });
  }

  onExit(listener: (exit: AppExit) => void): void {
    if (this.exit) listener(this.exit);
    else this.exitListeners.push(listener);
  }

  onLog(listener: (line: LogLine) => void): void {
    this.logListeners.push(listener);
  }

  onActivity(listener: () => void): void {
    this.activityListeners.push(listener);
  }

  /**
   * The app's exit once the event stream reported it, waiting up to `ms` for it: an inject call
   * cut off by the app's own exit learns why from here.
   */
  exitWithin(ms: number): Promise<AppExit | undefined> {
    if (this.exit) return Promise.resolve(this.exit);
    return new Promise((resolve) => {
      const timer = setTimeout(() => resolve(undefined), ms);
      this.onExit((exit) => {
        clearTimeout(timer);
        resolve(exit);
      });
    });
  }

  /** The last lines the app printed, for a failure's message. */
  lastLines(): string[] {
    return [...this.recent];
  }

  /** Stops listening and cuts its egress tunnels; the reap deletes the claim. */
  close(): void {
    this.phase = 'gone';
    this.stream?.close();
    this.egress.rules.set({ allowedHosts: [], allowPrivate: [] });
  }

  private onEvent(event: PodEvent): void {
    if (event.t === 'log') {
      const text = String(event.text).slice(0, 16_384);
      this.recent.push(text);
      if (this.recent.length > EXIT_LINES) this.recent.shift();
      const line: LogLine = {
        time: typeof event.time === 'string' ? event.time : new Date().toISOString(),
        stream: event.stream === 'stderr' ? 'stderr' : 'stdout',
        text,
      };
      for (const listener of this.logListeners) listener(line);
    } else if (event.t === 'activity') {
      for (const listener of this.activityListeners) listener();
    } else if (event.t === 'exit') {
      this.ended(event);
    }
  }

  private ended(report: ExitReport): void {
    if (this.exit) return;
    const lastLines = Array.isArray(report.lastLines)
      ? report.lastLines.slice(-EXIT_LINES).map((l) => String(l).slice(0, 16_384))
      : [];
    this.exit = {
      code: typeof report.code === 'number' ? report.code : null,
      signal: typeof report.signal === 'string' ? report.signal : null,
      lastLines,
    };
    this.stream?.close();
    for (const listener of this.exitListeners.splice(0)) listener(this.exit);
  }
}
