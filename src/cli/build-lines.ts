import { appPath, type ApiClient } from './api-client.js';
import { CliError, EXIT } from './errors.js';
import type { Output } from './output.js';
import { sseMessages } from './sse.js';

export interface BuildLines {
  /** Opens the app's log stream unless it is open: call it once the app may exist. */
  open(): void;
  /**
   * Lets the lines on their way be printed (2 s at most): until one of the new version's came and
   * then none for a moment. Then closes the stream.
   */
  stop(): Promise<void>;
}

/** The stream has printed what it had once it has been quiet this long. */
const QUIET_MS = 300;
const STOP_WAIT_MS = 2000;

/**
 * Prints the log lines of versions `from` and later (install, build, start, Slipway's notes) as
 * they come, from the app's log stream. The stream's snapshot holds what was printed before it
 * opened, so opening late loses nothing. Lines only show the way: a stream that cannot be had is
 * said once, and the deploy goes on.
 */
export function followBuildLines(
  api: ApiClient,
  app: string,
  from: number,
  out: Output,
): BuildLines {
  const abort = new AbortController();
  let state: 'closed' | 'opening' | 'open' | 'done' = 'closed';
  let printedAt: number | undefined;
  const print = async (res: Response): Promise<void> => {
    state = 'open';
    for await (const message of sseMessages(res)) {
      // The server ends a stream this way when it goes: the deploy's poll reports what follows.
      if (message.event === 'error') break;
      if (Number(message.id) < from) continue;
      out.logLine(message.data);
      printedAt = Date.now();
    }
    state = 'done';
  };
  const failed = (err: unknown): void => {
    if (abort.signal.aborted) return;
    // A new app is not there until its upload is read: the next phase event opens it again.
    if (err instanceof CliError && err.code === 'not_found' && state === 'opening') {
      state = 'closed';
      return;
    }
    state = 'done';
    // A bad key or a server gone: the deploy itself reports that, once.
    if (err instanceof CliError && (err.exitCode === EXIT.auth || err.code === 'unreachable')) {
      return;
    }
    out.note(`  (build lines unavailable: ${(err as Error).message})`);
  };
  return {
    open() {
      if (state !== 'closed' || abort.signal.aborted) return;
      state = 'opening';
      api
        .stream(`${appPath(app)}/logs?follow=true`, abort.signal)
        .then(print)
        .catch(failed);
    },
    async stop() {
      const deadline = Date.now() + STOP_WAIT_MS;
      const busy = (): boolean =>
        state === 'opening' ||
        (state === 'open' && (printedAt === undefined || Date.now() - printedAt < QUIET_MS));
      while (busy() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      abort.abort();
    },
  };
}
