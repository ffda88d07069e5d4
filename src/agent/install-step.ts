import { spawn } from 'node:child_process';
import { LineSplitter, Recent } from '../io/output-lines.js';
import { warn } from './diag.js';
import { APP_DIR, EXIT_LINES, type InstallFailure } from './protocol.js';

/** One command of an install (`npm ci`, `npm run build`, `pip install`), run in /app. */
export interface InstallStep {
  /** Names the step in a failure: `npm ci`. */
  command: string;
  /** The whole command line as the user would type it, for the log. */
  display: string;
  file: string;
  args: string[];
  env: Record<string, string>;
  /** It builds what runs (`npm run build`, runtime.build): the inject looks in the built tree. */
  builds?: true;
}

export type StepResult = { ok: true; ms: number } | { ok: false; failure: InstallFailure };

/** Every install line carries it, so users tell the install's output from their app's. */
export const INSTALL_TAG = '[install]';

/**
 * Runs the step as a child of the agent, in its own process group, until `deadline`. Its output
 * lines are the app's log lines (the agent's stdout/stderr, tapped into the ring) with the install
 * tag. Whatever the step leaves running (a postinstall daemon) is killed with it once it exits:
 * nothing the install started may outlive it, least of all a tunnel to the registry.
 */
export function runStep(step: InstallStep, deadline: number): Promise<StepResult> {
  const started = performance.now();
  const recent = new Recent<string>(EXIT_LINES);
  say('stdout', `$ ${step.display}`);
  return new Promise((resolve) => {
    const child = spawn(step.file, step.args, {
      cwd: APP_DIR,
      env: step.env,
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    const splitters = (['stdout', 'stderr'] as const).map((stream) => {
      const splitter = new LineSplitter((line) => {
        recent.push(line);
        say(stream, line);
      });
      child[stream]?.on('data', (chunk: Buffer) => splitter.push(chunk));
      return splitter;
    });
    let timedOut = false;
    let done = false;
    const timer = setTimeout(
      () => {
        timedOut = true;
        killGroup(child.pid, 'SIGKILL');
      },
      Math.max(0, deadline - Date.now()),
    );
    const finish = (code: number | null, signal: string | null, error?: string) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      for (const splitter of splitters) splitter.flush();
      if (error !== undefined) recent.push(error);
      const ms = Math.round(performance.now() - started);
      if (code === 0 && !timedOut) {
        say('stdout', `${step.command} done in ${(ms / 1000).toFixed(1)} s`);
        return resolve({ ok: true, ms });
      }
      const lastLines = recent.list();
      resolve({ ok: false, failure: { command: step.command, code, signal, timedOut, lastLines } });
    };
    child.once('error', (err) => finish(null, null, `cannot run ${step.command}: ${err.message}`));
    // 'exit' first: stragglers holding the pipes would otherwise keep 'close' from coming.
    child.once('exit', () => killGroup(child.pid, 'SIGKILL'));
    child.once('close', (code, signal) => finish(code, signal));
  });
}

function say(stream: 'stdout' | 'stderr', line: string): void {
  process[stream].write(`${INSTALL_TAG} ${line}\n`);
}

function killGroup(pid: number | undefined, signal: NodeJS.Signals): void {
  if (pid === undefined) return;
  try {
    process.kill(-pid, signal);
  } catch (err) {
    // ESRCH: the group is already empty, which is the point.
    if ((err as NodeJS.ErrnoException).code !== 'ESRCH') {
      warn('cannot kill the install step', { pid, error: String(err) });
    }
  }
}
