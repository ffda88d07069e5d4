import type { AppExit, LogLine, Sandbox } from '../runtime/runtime.js';

/** What a holder hears of a sandbox: its lines, its exit and its visitors. */
export type SandboxEvents = Pick<Sandbox, 'onLog' | 'onExit' | 'onActivity'>;

/**
 * Lines a sandbox prints before its app's inject asks for them: a head start's first notes
 * (head-starts.ts). Bounded as the app's log ring is: the oldest go first.
 */
const MAX_HELD_LINES = 1_000;

/**
 * A sandbox's events, heard from its claim on and held back until released: then what came
 * meanwhile is replayed in order and the rest flows through. A sandbox started ahead of its
 * app's machine speaks before the machine is there to listen; its app's log and steps must read
 * as for a start the machine made itself, so they hear it from the machine's own inject on. Its
 * exit is released on its own, after the inject's answer, as a start's exit comes after it.
 */
export class HeldEvents implements SandboxEvents {
  private released = false;
  private exitReleased = false;
  private lines: LogLine[] = [];
  private exit: AppExit | undefined;
  private visited = false;
  private readonly logs: ((line: LogLine) => void)[] = [];
  private readonly exits: ((exit: AppExit) => void)[] = [];
  private readonly visits: (() => void)[] = [];

  constructor(sandbox: Sandbox) {
    sandbox.onLog((line) => {
      if (this.released) for (const listener of this.logs) listener(line);
      else if (this.lines.push(line) > MAX_HELD_LINES) this.lines.shift();
    });
    sandbox.onExit((exit) => {
      if (this.exitReleased) for (const listener of this.exits) listener(exit);
      else this.exit = exit;
    });
    sandbox.onActivity?.(() => {
      if (this.released) for (const listener of this.visits) listener();
      else this.visited = true;
    });
  }

  onLog(listener: (line: LogLine) => void): void {
    this.logs.push(listener);
  }

  onExit(listener: (exit: AppExit) => void): void {
    this.exits.push(listener);
  }

  onActivity(listener: () => void): void {
    this.visits.push(listener);
  }

  /** From now on the listeners hear the lines and visits, beginning with those held back. */
  release(): void {
    if (this.released) return;
    this.released = true;
    const { lines, visited } = this;
    this.lines = [];
    for (const line of lines) for (const listener of this.logs) listener(line);
    if (visited) for (const listener of this.visits) listener();
  }

  /** From now on the listeners hear the exit, at once if it came already. */
  releaseExit(): void {
    if (this.exitReleased) return;
    this.exitReleased = true;
    const { exit } = this;
    this.exit = undefined;
    if (exit) for (const listener of this.exits) listener(exit);
  }
}
