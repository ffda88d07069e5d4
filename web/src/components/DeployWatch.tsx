import { useEffect, useState } from 'preact/hooks';
import { api, errorText, type ApiError } from '../lib/api';
import { onAppEvent } from '../lib/events';
import { readSse } from '../lib/sse';
import type { AppView } from '../lib/types';
import { PhaseBadge } from './PhaseBadge';
import { Problem } from './Problem';

const LAST_LINES = 15;

/**
 * A deploy after its upload: the phase moving live until Ready or Failed; on a failure its reason
 * and the app's last log lines (from the error, or read from the log snapshot).
 */
export function DeployWatch({ appId, failure }: { appId: string; failure?: ApiError }) {
  const [app, setApp] = useState<AppView>();
  const [lines, setLines] = useState<string[]>(() => logsOf(failure));
  const [problem, setProblem] = useState<string>();

  useEffect(() => {
    const refresh = () =>
      api<AppView>(`/v1/apps/${appId}`)
        .then(setApp)
        .catch((err: unknown) => setProblem(errorText(err)));
    void refresh();
    return onAppEvent((event) => {
      if (event.app_id === appId && event.kind !== 'delete') void refresh();
    });
  }, [appId]);

  const failed = app?.phase === 'Failed' || failure !== undefined;
  useEffect(() => {
    if (!failed || lines.length > 0) return;
    const abort = new AbortController();
    const seen: string[] = [];
    readSse(`/v1/apps/${appId}/logs`, (m) => seen.push(m.data), abort.signal)
      .then(() => setLines(seen.slice(-LAST_LINES)))
      .catch((err: unknown) => setProblem(errorText(err)));
    return () => abort.abort();
  }, [failed, appId]);

  const reason = failure?.details?.reason ?? app?.reason;
  const message = failure?.details?.message ?? app?.message;
  return (
    <section class="watch" aria-live="polite">
      <p>
        Phase: {app ? <PhaseBadge phase={app.phase} /> : '…'}
        {app?.phase === 'Ready' && app.url && (
          <>
            {' '}
            at{' '}
            <a href={app.url} target="_blank" rel="noopener noreferrer">
              {app.url}
            </a>
          </>
        )}
      </p>
      {failure && <p class="error">{failure.message}</p>}
      {failed && (
        <p>
          Reason: <code>{String(reason ?? '')}</code> {String(message ?? '')}
        </p>
      )}
      {failed && lines.length > 0 && (
        <>
          <h2>Last log lines</h2>
          <pre class="log" tabIndex={0}>
            {lines.join('\n')}
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

function logsOf(failure: ApiError | undefined): string[] {
  const logs = failure?.details?.logs;
  return Array.isArray(logs) ? logs.map(String).slice(-LAST_LINES) : [];
}
