import { appPath, type ApiClient, type AppView } from './api-client.js';
import { followBuildLines, type BuildLines } from './build-lines.js';
import { CliError } from './errors.js';
import type { Output } from './output.js';
import { watchPhases } from './phase-watch.js';
import { PollWait } from './poll-wait.js';

/** What a person sees while a release (a deploy, a rollback) is on its way to live. */
export interface ReleaseWatch {
  /** The app exists now: its log stream may open. */
  appExists(): void;
  /** A polled App view: its activity, when the server sends one, is shown. */
  polled(view: AppView): void;
  /** The poller's wait, ended early once an event says nothing is in flight any more. */
  readonly wait: PollWait;
  /** Lets the lines on their way be printed, then stops; `final` is the app once settled. */
  stop(final?: AppView): Promise<void>;
}

/**
 * The phase as it moves (not under --json) and, on a terminal, the new version's log lines and
 * activity steps. Resolves once the event stream is open, so the release may start.
 */
export async function watchRelease(
  api: ApiClient,
  app: string,
  out: Output,
): Promise<ReleaseWatch> {
  const lines = out.interactive ? await linesOfNextVersion(api, app, out) : undefined;
  const wait = new PollWait();
  const phases = out.json
    ? undefined
    : await watchPhases(api, app, out, (event) => {
        lines?.open();
        // Settled (or failed): the poll that tells the outcome need not wait its turn.
        if (!event.activity) wait.now();
      });
  return {
    appExists: () => lines?.open(),
    polled: (view) => phases?.activity(view.activity),
    wait,
    async stop(final) {
      await lines?.stop();
      phases?.stop(final);
    },
  };
}

/**
 * Follows the log lines of the version the release makes: the one after the newest there is, or
 * the first of a new app (whose stream opens once the app exists).
 */
async function linesOfNextVersion(api: ApiClient, name: string, out: Output): Promise<BuildLines> {
  const app = await api.call<AppView>('GET', appPath(name)).catch((err: unknown) => {
    if (err instanceof CliError && err.code === 'not_found') return undefined;
    throw err;
  });
  const newest = app ? (app.last_deploy?.version ?? app.live_version ?? 0) : 0;
  const lines = followBuildLines(api, name, newest + 1, out);
  if (app) lines.open();
  return lines;
}
