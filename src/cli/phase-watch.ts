import { activityLine, type Activity } from './activity.js';
import { appPath, type ApiClient, type AppView } from './api-client.js';
import { CliError, EXIT } from './errors.js';
import type { Output } from './output.js';
import { PollWait, pollWaitMs } from './poll-wait.js';
import { sseMessages } from './sse.js';

/** An `event: app` of /api/events (api/openapi.yaml `AppEvent`); fields the CLI reads. */
interface AppEvent {
  kind: string;
  app_id: string;
  phase: string;
  version?: number;
  message?: string;
  activity?: Activity;
}

const OPEN_WAIT_MS = 2000;

export interface PhaseWatch {
  /** Prints the step the app is at, when it is a new one (from a polled App view). */
  activity(activity: Activity | undefined): void;
  /** Stops printing; `final` (the app once the deploy settled) is printed if it was not yet. */
  stop(final?: AppView): void;
}

/**
 * Prints an app's phase and activity as they move, from /api/events; `onEvent` hears of each
 * event of the app. Resolves once the stream is open (or could not be, or after 2 s), so no phase
 * of the deploy that follows is missed. The deploy's own answer and the app's state decide the
 * outcome; these lines only show the way there.
 */
export async function watchPhases(
  api: ApiClient,
  app: string,
  out: Output,
  onEvent: (event: { phase: string; activity?: Activity }) => void = () => undefined,
): Promise<PhaseWatch> {
  const abort = new AbortController();
  let last = '';
  let lastStep = '';
  const show = (phase: string, message?: string): void => {
    if (abort.signal.aborted) return;
    // A failure's message ends with the app's last lines: the error after the deploy shows them.
    const headline = message?.split('\n', 1)[0]?.replace(/;? last lines:$/, '');
    const line = `  ${phase}${headline ? `: ${headline}` : ''}`;
    if (line !== last) out.note(line);
    last = line;
  };
  const step = (activity: Activity | undefined): void => {
    if (abort.signal.aborted || !activity) return;
    // Events and polls both carry it: a step is printed when it begins, once.
    const key = `${activity.step}@${activity.since}`;
    if (key !== lastStep) out.note(activityLine(activity));
    lastStep = key;
  };
  const report = (err: unknown): void => {
    if (abort.signal.aborted) return;
    // A bad key or a server that cannot be reached: the deploy itself reports that, once.
    if (err instanceof CliError && (err.exitCode === EXIT.auth || err.code === 'unreachable')) {
      return;
    }
    // Not fatal: the deploy goes on without the phase lines, and the person is told why.
    out.note(`  (phase updates unavailable: ${(err as Error).message})`);
  };
  const follow = async (res: Response): Promise<void> => {
    for await (const message of sseMessages(res)) {
      if (message.event !== 'app') continue;
      const event = JSON.parse(message.data) as AppEvent;
      if (event.app_id !== app) continue;
      onEvent(event);
      show(event.phase, event.message);
      step(event.activity);
    }
  };
  const opened = api.stream('/api/events', abort.signal).then((res) => {
    follow(res).catch(report);
  }, report);
  // A proxy that holds back the stream's head must not hold back the deploy: lines come late, then.
  await Promise.race([opened, new Promise((r) => setTimeout(r, OPEN_WAIT_MS).unref())]);
  return {
    activity: step,
    stop(final) {
      // The settled state may come back from the poll before its event: printed here, once.
      if (final) show(final.phase, final.message);
      abort.abort();
    },
  };
}

/**
 * After a 202 (or to confirm a 200), polls the app until its newest deploy has an outcome: `Ready`
 * returns the app, `Failed` (or an app with nothing serving) is an error naming the reason.
 * `onView` sees each App view polled; between polls it waits as long as the app's
 * `poll_after_seconds` says (bounded), or until `wait` is woken.
 */
export async function waitForOutcome(
  api: ApiClient,
  app: string,
  onView: (view: AppView) => void = () => undefined,
  wait: PollWait = new PollWait(),
): Promise<AppView> {
  for (;;) {
    const view = await api.call<AppView>('GET', appPath(app));
    onView(view);
    // A string: servers since issue 29 also record `Cancelled`.
    const outcome: string | undefined = view.last_deploy?.outcome;
    if (view.phase === 'Failed' || outcome === 'Failed') throw deployFailed(view);
    if (outcome === 'Cancelled') throw cancelled(view);
    if (outcome === 'Ready') return view;
    // Apps recorded before outcomes existed have no last_deploy: their phase tells.
    if (outcome === undefined && (view.phase === 'Ready' || view.phase === 'Suspended'))
      return view;
    await wait.sleep(pollWaitMs(view));
  }
}

/** Someone cancelled the release on its way (the dashboard, an agent, the API). */
function cancelled(view: AppView): CliError {
  const serving = view.live_version !== null ? `; version ${view.live_version} still serves` : '';
  return new CliError(
    EXIT.api,
    'cancelled',
    `version ${view.last_deploy?.version ?? '?'} of ${view.app_id} was cancelled${serving}`,
    'deploy again when you want it live',
    view,
  );
}

function deployFailed(view: AppView): CliError {
  const last = view.last_deploy;
  const reason = last?.reason ?? view.reason;
  const message = last?.message ?? view.message;
  // A version that went live and crashed within the stability window handed traffic back.
  const again = last?.reason === 'CrashedAfterSwitch' ? 'serves again' : 'is still serving';
  const serving =
    view.live_version !== null && view.phase !== 'Failed'
      ? `; version ${view.live_version} ${again}`
      : '';
  const version = last ? ` --version ${last.version}` : '';
  // The message may end with the app's last lines: what serves is said before them.
  const [headline = '', ...lines] = message.split('\n');
  const tail = lines.length > 0 ? `\n${lines.join('\n')}` : '';
  return new CliError(
    EXIT.api,
    'deploy_failed',
    `${reason}: ${headline.replace(/;? last lines:$/, '')}${serving}${tail}`,
    `see the logs: slipway logs ${view.app_id}${version}`,
    view,
  );
}
