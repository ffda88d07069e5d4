import { useState } from 'preact/hooks';
import { useApps } from '../lib/apps-store';
import { ago, exact } from '../lib/format';
import { PhaseBadge } from '../components/PhaseBadge';
import { AccessBadge } from '../components/AccessBadge';
import { EmptyState } from '../components/EmptyState';

export function AppsPage({ admin }: { admin: boolean }) {
  const { apps, loading, error } = useApps();
  const [query, setQuery] = useState('');
  const [owner, setOwner] = useState('');
  const owners = [...new Set(apps.map((a) => a.owner))].sort();
  const needle = query.trim().toLowerCase();
  const shown = apps.filter(
    (a) =>
      (!owner || a.owner === owner) &&
      (!needle || a.name.includes(needle) || (a.url ?? '').toLowerCase().includes(needle)),
  );

  return (
    <>
      <div class="title-row">
        <h1>Apps</h1>
        <a class="button primary" href="#/deploy">
          Deploy an app
        </a>
      </div>
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      {!loading && apps.length === 0 && !error && <EmptyState />}
      {apps.length > 0 && (
        <>
          <div class="filters">
            <label>
              Search
              <input
                type="search"
                value={query}
                placeholder="name or URL"
                onInput={(e) => setQuery(e.currentTarget.value)}
              />
            </label>
            {admin && (
              <label>
                Owner
                <select value={owner} onChange={(e) => setOwner(e.currentTarget.value)}>
                  <option value="">Everyone</option>
                  {owners.map((o) => (
                    <option key={o} value={o}>
                      {o}
                    </option>
                  ))}
                </select>
              </label>
            )}
          </div>
          <div class="table-wrap">
            <table class="apps">
              <caption class="sr-only">
                {shown.length} of {apps.length} apps
              </caption>
              <thead>
                <tr>
                  <th scope="col">Name</th>
                  <th scope="col">Phase</th>
                  <th scope="col">URL</th>
                  <th scope="col">Last deploy</th>
                  <th scope="col">Owner</th>
                </tr>
              </thead>
              <tbody>
                {shown.map((app) => (
                  <tr key={app.app_id} data-app={app.app_id}>
                    <th scope="row">
                      <a href={`#/apps/${app.app_id}`}>{app.name}</a>
                      {app.access === 'private' && (
                        <>
                          {' '}
                          <AccessBadge access="private" />
                        </>
                      )}
                    </th>
                    <td>
                      <PhaseBadge phase={app.phase} />
                    </td>
                    <td>
                      {app.url ? (
                        <a href={app.url} target="_blank" rel="noopener noreferrer">
                          {app.url.replace(/^https?:\/\//, '')}
                        </a>
                      ) : (
                        <span class="muted">not live</span>
                      )}
                    </td>
                    <td>
                      <time dateTime={app.last_deployed_at} title={exact(app.last_deployed_at)}>
                        {ago(app.last_deployed_at)}
                      </time>
                      {app.last_deploy && app.last_deploy.outcome !== 'Ready' && (
                        <span class="muted">
                          {' '}
                          · v{app.last_deploy.version} {app.last_deploy.outcome}
                        </span>
                      )}
                    </td>
                    <td>{app.owner}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
          {shown.length === 0 && <p>No app matches.</p>}
        </>
      )}
    </>
  );
}
