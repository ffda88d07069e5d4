import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BIN } from './run-cli.js';

export interface PtyRun {
  /** stdout and stderr as the terminal showed them, with `\r\n` made `\n`. */
  readonly screen: string;
  /** Resolves once the screen holds `text`; rejects after `timeoutMs` or if the CLI exits first. */
  waitFor(text: string | RegExp, timeoutMs?: number): Promise<void>;
  /** The CLI's exit code, once it has exited. */
  readonly exited: Promise<number | null>;
  /** Writes to the CLI's terminal (what a person types). */
  type(text: string): void;
}

/**
 * Runs `node bin/slipway.mjs ...args` on a pseudo-terminal, as a person at a terminal runs it:
 * `script` (util-linux) gives the CLI a pty for stdin, stdout and stderr. HOME and XDG_CONFIG_HOME
 * point at a fresh temp dir, as in runCli.
 */
export function runOnPty(args: string[], env: Record<string, string | undefined>): PtyRun {
  const home = mkdtempSync(join(tmpdir(), 'slipway-pty-home-'));
  const merged: Record<string, string> = {};
  const all = { ...process.env, HOME: home, XDG_CONFIG_HOME: join(home, '.config'), ...env };
  for (const [key, value] of Object.entries(all)) if (value !== undefined) merged[key] = value;
  const command = [process.execPath, BIN, ...args].map(shellQuote).join(' ');
  // -e: script exits with the CLI's code; -f: output is flushed as it comes.
  const child = spawn('script', ['-qfec', command, '/dev/null'], { env: merged });
  let screen = '';
  const waiters = new Set<() => void>();
  const changed = (): void => {
    for (const wake of [...waiters]) wake();
  };
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    screen += chunk.replace(/\r\n/g, '\n');
    changed();
  });
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    screen += chunk;
    changed();
  });
  let done = false;
  const exited = new Promise<number | null>((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code) => {
      done = true;
      rmSync(home, { recursive: true, force: true });
      changed();
      resolve(code);
    });
  });
  const holds = (text: string | RegExp): boolean =>
    typeof text === 'string' ? screen.includes(text) : text.test(screen);
  return {
    get screen() {
      return screen;
    },
    exited,
    type(text) {
      child.stdin.write(text);
    },
    waitFor(text, timeoutMs = 30_000) {
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`never showed ${String(text)}; screen:\n${screen}`));
        }, timeoutMs);
        const check = (): void => {
          if (!holds(text) && !done) return;
          clearTimeout(timer);
          waiters.delete(check);
          if (holds(text)) resolve();
          else reject(new Error(`exited without showing ${String(text)}; screen:\n${screen}`));
        };
        waiters.add(check);
        check();
      });
    },
  };
}

const shellQuote = (arg: string): string => `'${arg.replace(/'/g, `'\\''`)}'`;
