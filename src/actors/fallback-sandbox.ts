import type { Duplex } from 'node:stream';
import type { AppExit, LogLine, Sandbox } from '../runtime/runtime.js';
import { FallbackSocket } from './fallback-socket.js';

/**
 * The serving sandbox as the router sees it during a stability window: connections go to the new
 * release, and a request it dies under goes to the previous release's sandbox (FallbackSocket).
 * Everything else is the serving sandbox's own.
 */
class FallbackSandbox implements Sandbox {
  constructor(
    readonly serving: Sandbox,
    readonly fallback: Sandbox,
  ) {}

  get id(): string {
    return this.serving.id;
  }

  get template(): string {
    return this.serving.template;
  }

  get address(): Sandbox['address'] {
    return this.serving.address;
  }

  connect(): Duplex {
    return new FallbackSocket(this.serving.connect(), () => this.fallback.connect());
  }

  onExit(listener: (exit: AppExit) => void): void {
    this.serving.onExit(listener);
  }

  onLog(listener: (line: LogLine) => void): void {
    this.serving.onLog(listener);
  }
}

/**
 * One FallbackSandbox per switch, handed out for every request of the window: the router keeps
 * one connection pool per sandbox object, so its connections are reused across requests.
 */
export class FallbackSandboxes {
  private last: FallbackSandbox | undefined;

  /** The window closed: its sandboxes are not held here any longer. */
  forget(): void {
    this.last = undefined;
  }

  over(serving: Sandbox, fallback: Sandbox): Sandbox {
    const last = this.last;
    if (last && last.serving === serving && last.fallback === fallback) return last;
    this.last = new FallbackSandbox(serving, fallback);
    return this.last;
  }
}
