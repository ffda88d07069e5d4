import { useEffect, useMemo, useState } from 'preact/hooks';
import { api, errorText } from '../lib/api';
import { onAppEvent } from '../lib/events';
import { newestOnly } from '../lib/newest-only';
import { ago, exact } from '../lib/format';
import { go } from '../lib/route';
import type { Access, AppView, VersionView } from '../lib/types';
import { AppAccess } from '../components/AppAccess';
import { AppActivity } from '../components/AppActivity';
import { AppEnv } from '../components/AppEnv';
import { AppLogs } from '../components/AppLogs';
import { AppShares } from '../components/AppShares';
import { AppVersions } from '../components/AppVersions';
import { ConfirmButton } from '../components/Confirm';
import { AppRedeploy } from '../components/AppRedeploy';
import { CopyButton } from '../components/CopyButton';
import { PhaseBadge } from '../components/PhaseBadge';
import { Problem } from '../components/Problem';

/**
 * One app: URL, phase, access and env, versions and rollback, live logs, share links and its
 * lifecycle actions.
 */
export function AppPage({ id }: { id: string }) {
  const [app, setApp] = useState<AppView>();
  const [versions, setVersions] = useState<VersionView[]>([]);
  const [problem, setProblem] = useState<string>();
  const [gone, setGone] = useState(false);

  const refresh = useMemo(
    () =>
      newestOnly(
        () =>
          Promise.all([
            api<AppView>(`/v1/apps/${id}`),
            api<{ items: VersionView[] }>(`/v1/apps/${id}/versions`),
          ]),
        ([view, history]) => {
          setApp(view);
          setVersions(history.items);
        },
        (err) => {
          if ((err as { status?: number }).status === 404) setGone(true);
          else setProblem(errorText(err));
        },
      ),
    [id],
  );

  useEffect(() => {
    void refresh();
    return onAppEvent((event) => {
      if (event.app_id !== id) return;
      if (event.kind === 'delete') setGone(true);
      else void refresh();
    });
  }, [id]);

  const act = async (action: 'suspend' | 'resume' | 'delete') => {
    setProblem(undefined);
    try {
      if (action === 'delete') {
        await api(`/v1/apps/${id}`, { method: 'DELETE' });
        go({ page: 'apps' });
        return;
      }
      setApp(await api<AppView>(`/v1/apps/${id}/${action}`, { method: 'POST' }));
    } catch (err) {
      setProblem(errorText(err));
    }
  };

  const setAccess = async (access: Access) => {
    setProblem(undefined);
    try {
      setApp(await api<AppView>(`/v1/apps/${id}`, { method: 'PATCH', json: { access } }));
    } catch (err) {
      setProblem(errorText(err));
    }
  };

  if (gone) {
    return (
      <>
        <h1>{id}</h1>
        <p>There is no app {id} that you can see (it may have been deleted).</p>
        <a href="#/">Back to the apps</a>
      </>
    );
  }
  if (!app) return <p aria-busy="true">{problem ?? 'Loading…'}</p>;

  const live = versions.find((v) => v.live) ?? versions[0];
  return (
    <>
      <div class="title-row">
        <h1>{app.name}</h1>
        <PhaseBadge phase={app.phase} />
      </div>
      <p class="muted" data-testid="reason">
        <code>{app.reason}</code> {app.message}
      </p>
      {app.activity && (
        <p class="activity" data-testid="activity">
          Deploying: {app.activity.step}, started {ago(app.activity.since)}
          {app.activity.last_line && (
            <>
              {' '}
              — <code>{app.activity.last_line}</code>
            </>
          )}
        </p>
      )}
      <Problem text={problem} />
      <dl class="facts">
        <dt>URL</dt>
        <dd>
          {app.url ? (
            <>
              <a href={app.url} target="_blank" rel="noopener noreferrer">
                {app.url}
              </a>{' '}
              <CopyButton text={app.url} label="Copy URL" />
            </>
          ) : (
            'not live'
          )}
        </dd>
        <AppAccess app={app} onChange={setAccess} />
        <dt>Owner</dt>
        <dd>{app.owner}</dd>
        <dt>Runtime</dt>
        <dd>
          {app.runtime.template} on the {app.runtime.lane} lane
        </dd>
        <dt>Last deploy</dt>
        <dd>{exact(app.last_deployed_at)}</dd>
        <dt>Env</dt>
        <dd>{app.env.length ? app.env.map((e) => e.name).join(', ') : 'none'}</dd>
        <dt>Egress hosts</dt>
        <dd>{live?.egress.allowed_hosts.length ? live.egress.allowed_hosts.join(', ') : 'none'}</dd>
      </dl>
      <div class="row actions">
        {app.phase === 'Suspended' ? (
          <button type="button" onClick={() => act('resume')}>
            Resume
          </button>
        ) : (
          <ConfirmButton
            label="Suspend"
            question={`Suspend ${app.name}? It stops serving until it is resumed or requested.`}
            confirm="Suspend"
            onConfirm={() => act('suspend')}
          />
        )}
        <ConfirmButton
          label="Delete"
          question={`Delete ${app.name} and its history? This cannot be undone.`}
          confirm="Delete"
          danger
          onConfirm={() => act('delete')}
        />
      </div>
      <AppRedeploy app={app} versions={versions} onDone={refresh} />
      <AppEnv
        app={app}
        onSaved={(view) => {
          setApp(view);
          void refresh();
        }}
      />
      <AppVersions id={id} versions={versions} onRolledBack={refresh} />
      <AppLogs id={id} versions={versions} />
      <AppShares id={id} access={app.access} />
      <AppActivity id={id} />
    </>
  );
}
