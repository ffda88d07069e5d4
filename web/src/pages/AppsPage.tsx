import { useState } from 'preact/hooks';
import { useApps } from '../lib/apps-store';
import { ago, exact } from '../lib/format';
import { PhaseBadge } from '../components/PhaseBadge';
import { AccessBadge } from '../components/AccessBadge';
import { EmptyState } from '../components/EmptyState';
import { Problem } from '../components/Problem';
import { Table } from '../components/Table';
import { TextField } from '../components/TextField';

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
      <Problem text={error} />
      {!loading && apps.length === 0 && !error && <EmptyState />}
      {apps.length > 0 && (
        <>
          <div class="filters">
            <TextField
              label="Search"
              type="search"
              value={query}
              placeholder="name or URL"
              onValue={setQuery}
            />
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
          <Table
            class="apps"
            caption={`${shown.length} of ${apps.length} apps`}
            columns={['Name', 'Phase', 'URL', 'Last deploy', 'Owner']}
          >
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
          </Table>
          {shown.length === 0 && <p>No app matches.</p>}
        </>
      )}
    </>
  );
}
