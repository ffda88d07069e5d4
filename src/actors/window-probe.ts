/** Failed checks in a row that count as unhealthy: one slow answer on a busy host is not. */
const FAILURES_IN_A_ROW = 3;

/** What the machine records as the reason the release stopped answering. */
export const UNHEALTHY_MESSAGE = `${FAILURES_IN_A_ROW} health checks in a row failed (its port stopped accepting)`;

export interface WindowProbeDeps {
  everyMs: number;
  /** True when the sandbox's app answers (Runtime.health). */
  health: (sandboxId: string) => Promise<boolean>;
  /** The sandbox failed FAILURES_IN_A_ROW checks (`message` says so); probing it stops. */
  unhealthy: (sandboxId: string, message: string) => void;
}

/**
 * Checks the new release's health while its stability window is open (the supervisor says which
 * sandbox, if any, after every transition). An exit is heard by itself; this catches an app that
 * stays alive but stops answering, so that the previous release can take the traffic back too.
 */
export class WindowProbe {
  private target: string | undefined;
  private failures = 0;
  private timer: ReturnType<typeof setTimeout> | undefined;

  constructor(private readonly deps: WindowProbeDeps) {}

  /** Probes `sandboxId` from now on (undefined: nothing); the same one again changes nothing. */
  follow(sandboxId: string | undefined): void {
    if (sandboxId === this.target) return;
    this.stop();
    if (sandboxId === undefined || this.deps.everyMs <= 0) return;
    this.target = sandboxId;
    this.arm(sandboxId);
  }

  stop(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.target = undefined;
    this.failures = 0;
  }

  private arm(sandboxId: string): void {
    this.timer = setTimeout(() => void this.check(sandboxId), this.deps.everyMs);
    this.timer.unref?.();
  }

  private async check(sandboxId: string): Promise<void> {
    this.timer = undefined;
    const ok = await this.deps.health(sandboxId);
    if (this.target !== sandboxId) return; // the window closed or moved on meanwhile
    this.failures = ok ? 0 : this.failures + 1;
    if (this.failures < FAILURES_IN_A_ROW) return this.arm(sandboxId);
    this.stop();
    this.deps.unhealthy(sandboxId, UNHEALTHY_MESSAGE);
  }
}
