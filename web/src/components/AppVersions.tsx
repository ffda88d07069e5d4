import { useState } from 'preact/hooks';
import { api, errorText } from '../lib/api';
import { ago, exact } from '../lib/format';
import type { VersionView } from '../lib/types';
import { Problem } from './Problem';
import { Table } from './Table';

interface Props {
  id: string;
  versions: VersionView[];
  onRolledBack: () => void;
}

/** The history, newest first, with each version's outcome, the serving marker and rollback. */
export function AppVersions({ id, versions, onRolledBack }: Props) {
  const [busy, setBusy] = useState<number>();
  const [problem, setProblem] = useState<string>();

  const rollback = async (version: number) => {
    setBusy(version);
    setProblem(undefined);
    try {
      await api(`/v1/apps/${id}/rollback`, { method: 'POST', json: { version } });
    } catch (err) {
      setProblem(errorText(err));
    } finally {
      setBusy(undefined);
      onRolledBack();
    }
  };

  return (
    <section aria-labelledby="versions-title">
      <h2 id="versions-title">Versions</h2>
      <Problem text={problem} />
      <Table
        class="stacked"
        columns={[
          'Version',
          'Deployed',
          'By',
          'Outcome',
          'Source',
          <span class="sr-only">Actions</span>,
        ]}
      >
        {versions.map((v) => (
          <tr key={v.version} data-version={v.version} class={v.live ? 'serving' : undefined}>
            <th scope="row">
              v{v.version}
              {v.live && <span class="badge serving-mark">serving</span>}
              {v.rolled_back_from !== undefined && (
                <span class="muted"> (rollback to v{v.rolled_back_from})</span>
              )}
            </th>
            <td data-label="Deployed">
              <time dateTime={v.timestamp} title={exact(v.timestamp)}>
                {ago(v.timestamp)}
              </time>
            </td>
            <td data-label="By">{v.deployed_by ?? <span class="muted">unknown</span>}</td>
            <td data-label="Outcome">
              {v.outcome ?? '—'}
              {v.reason && v.outcome === 'Failed' && (
                <span class="muted">
                  {' '}
                  {v.reason}: {v.message}
                </span>
              )}
            </td>
            <td data-label="Source">
              <code title={v.source_hash}>{v.source_hash.slice(0, 19)}</code>
            </td>
            <td>
              {!v.live && (
                <button
                  type="button"
                  disabled={busy !== undefined}
                  aria-label={`Roll back to version ${v.version}`}
                  onClick={() => rollback(v.version)}
                >
                  {busy === v.version ? 'Rolling back…' : 'Roll back'}
                </button>
              )}
            </td>
          </tr>
        ))}
      </Table>
    </section>
  );
}
