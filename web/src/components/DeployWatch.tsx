import { useEffect, useRef, useState } from 'preact/hooks';
import { api, errorText, type ApiError } from '../lib/api';
import { onAppEvent } from '../lib/events';
import { failureTail, firstErrorLine, quotedLines, summaryOf, textOf } from '../lib/failure';
import { ago } from '../lib/format';
import { newestOnly } from '../lib/newest-only';
import { readSse } from '../lib/sse';
import type { AppView } from '../lib/types';
import { PhaseBadge } from './PhaseBadge';
import { Problem } from './Problem';

const MAX_LINES = 500;

interface Props {
  appId: string;
  /** The app's newest version before this deploy (0 for a new app): newer ones are this deploy's. */
  after: number;
  /** The deploy's own 500 deploy_failed, when the upload answered with one. */
  failure?: ApiError;
  /** True while the upload's answer has not come back (the server may still be taking it). */
  waiting?: boolean;
}

/**
 * A deploy after its upload: the phase and the current step moving live, the deploy's install,
 * build and start lines as they are printed, then the URL once Ready. On a failure it leads with
 * the first line that names the error, then its reason once and the tail that holds that line.
 */
export function DeployWatch({ appId, after, failure, waiting = false }: Props) {
  const [app, setApp] = useState<AppView>();
  const [lines, setLines] = useState<string[]>([]);
  const [problem, setProblem] = useState<string>();
  const box = useRef<HTMLPreElement>(null);

  const [asked, setAsked] = useState(0);

  useEffect(() => {
    const refresh = newestOnly(
      () => api<AppView>(`/v1/apps/${appId}`),
      (view) => {
        setApp(view);
        setProblem(undefined);
      },
      (err) => setProblem(errorText(err)),
    );
    // A new app has no row until the server has taken the upload: its first event says when.
    if (after > 0 || !waiting) void refresh();
    return onAppEvent((event) => {
      if (event.app_id === appId && event.kind !== 'delete') void refresh();
    });
  }, [appId, after, waiting, asked]);

  // While a step is under way the server says when to ask again: a step can change without an event.
  const pollAfter = app?.activity ? app.poll_after_seconds : undefined;
  useEffect(() => {
    if (pollAfter === undefined) return;
    const timer = setTimeout(() => setAsked((n) => n + 1), pollAfter * 1000);
    return () => clearTimeout(timer);
  }, [app, pollAfter]);

  const last = app?.last_deploy;
  const mine = last && last.version > after ? last : undefined;
  const version = mine?.version;
  const outcome = mine?.outcome;
  const failed =
    failure !== undefined ||
    outcome === 'Failed' ||
    (mine !== undefined && app?.phase === 'Failed');
  const settled = failed || (outcome !== undefined && outcome !== 'Pending');

  useEffect(() => {
    if (version === undefined) return;
    const abort = new AbortController();
    const seen: string[] = [];
    setLines([]);
    const query = new URLSearchParams({ version: String(version), follow: String(!settled) });
    readSse(
      `/v1/apps/${appId}/logs?${query}`,
      (m) => {
        if (m.event === 'error') return;
        seen.push(m.data);
        setLines(seen.slice(-MAX_LINES));
      },
      abort.signal,
    ).catch((err: unknown) => setProblem(errorText(err)));
    return () => abort.abort();
  }, [appId, version, settled]);

  useEffect(() => {
    const el = box.current;
    if (el) el.scrollTop = el.scrollHeight;
  }, [lines]);

  const reason = String(failure?.details?.reason ?? mine?.reason ?? app?.reason ?? '');
  const message = String(failure?.details?.message ?? mine?.message ?? app?.message ?? '');
  const reported = failure?.details?.logs;
  const told = Array.isArray(reported) ? reported.map(String) : [];
  const known = lines.length > 0 ? lines : told.length > 0 ? told : quotedLines(message);
  const serving =
    failure?.details?.live_version ?? (app?.phase === 'Ready' ? app.live_version : undefined);
  const activity = app?.activity;

  return (
    <section class="watch">
      <p role="status">
        {app && mine ? (
          <>
            Version {mine.version}: <StateBadge app={app} outcome={mine.outcome} />
          </>
        ) : failed ? (
          <PhaseBadge phase="Failed" />
        ) : (
          'Waiting for the server to take the deploy…'
        )}
        {activity && !failed && (
          <>
            {' '}
            <span data-testid="activity">
              {activity.step}, started {ago(activity.since)}
            </span>
          </>
        )}
        {outcome === 'Ready' && app?.url && (
          <>
            {' '}
            at{' '}
            <a href={app.url} target="_blank" rel="noopener noreferrer">
              {app.url}
            </a>
          </>
        )}
      </p>
      {failed ? (
        <FailureView
          lines={known}
          reason={reason}
          message={message}
          serving={typeof serving === 'number' ? serving : undefined}
        />
      ) : (
        <>
          <h2>Deploy log</h2>
          {activity?.last_line && lines.length === 0 && (
            <p class="muted activity">{activity.last_line}</p>
          )}
          <pre class="log" ref={box} tabIndex={0} aria-label="Deploy log" data-testid="deploy-log">
            {lines.length === 0 ? 'No lines yet.' : lines.map(textOf).join('\n')}
          </pre>
        </>
      )}
      <Problem text={problem} />
      <p>
        <a href={`#/apps/${appId}`}>Open the app's page</a>
      </p>
    </section>
  );
}

/**
 * The deploy's state: its version's outcome, or while it is on its way the app's phase (a
 * redeploy beside a serving version shows Pending, not the old version's Ready).
 */
function StateBadge({ app, outcome }: { app: AppView; outcome: string }) {
  if (outcome === 'Ready' || outcome === 'Failed') return <PhaseBadge phase={outcome} />;
  if (outcome !== 'Pending') return <span class="badge">{outcome}</span>;
  const serving = app.phase === 'Ready' || app.phase === 'Suspended';
  return <PhaseBadge phase={serving ? 'Pending' : app.phase} />;
}

interface FailureProps {
  lines: string[];
  reason: string;
  message: string;
  serving?: number;
}

/** The error first, its reason once, then the tail of the log that holds the error line. */
function FailureView({ lines, reason, message, serving }: FailureProps) {
  const first = firstErrorLine(lines) ?? summaryOf(message);
  const tail = failureTail(lines);
  return (
    <>
      <p class="error" data-testid="first-error">
        <strong>{first}</strong>
      </p>
      <p>
        Reason: <code>{reason}</code> {summaryOf(message)}
      </p>
      {serving !== undefined && <p>Version {serving} is still serving.</p>}
      {tail.length > 0 && (
        <>
          <h2>Last log lines</h2>
          <pre class="log" tabIndex={0} aria-label="Last log lines" data-testid="failure-tail">
            {tail.map(textOf).join('\n')}
          </pre>
        </>
      )}
    </>
  );
}
