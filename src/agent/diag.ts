import { writeSync } from 'node:fs';
import { placement } from './placement.js';
import type { Diag } from './protocol.js';

/**
 * The agent's own voice: JSON lines on DIAG_FD, so nothing it says can be mistaken for the app's
 * output on fds 1 and 2. Synchronous, because the 'exit' report is written from process 'exit'.
 */
export function diag(message: Diag): void {
  const line = `${JSON.stringify(message)}\n`;
  try {
    writeSync(placement.diagFd, line);
  } catch (err) {
    // The host end is gone (the sandbox is being reaped): there is nobody left to tell.
    lastDiagError = err instanceof Error ? err.message : String(err);
  }
}

/** Kept for /status: the only trace of a diagnostics channel that broke. */
export let lastDiagError: string | undefined;

export function info(msg: string, extra?: Record<string, unknown>): void {
  diag(extra ? { t: 'log', level: 'info', msg, extra } : { t: 'log', level: 'info', msg });
}

export function warn(msg: string, extra?: Record<string, unknown>): void {
  diag(extra ? { t: 'log', level: 'warn', msg, extra } : { t: 'log', level: 'warn', msg });
}

export function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
