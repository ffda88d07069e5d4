import { useEffect, useState } from 'preact/hooks';
import { api, errorText } from '../lib/api';
import { actionOf, whatOf } from '../lib/audit-text';
import { onAppEvent } from '../lib/events';
import { newestOnly } from '../lib/newest-only';
import { ago, exact } from '../lib/format';
import type { AuditEvent } from '../lib/types';
import { Problem } from './Problem';
import { Table } from './Table';

const SHOWN = 25;

/** What was done to the app, by whom, newest first: its own rows of the audit trail. */
export function AppActivity({ id }: { id: string }) {
  const [events, setEvents] = useState<AuditEvent[]>([]);
  const [problem, setProblem] = useState<string>();

  useEffect(() => {
    const refresh = newestOnly(
      () => api<{ events: AuditEvent[] }>(`/v1/apps/${id}/audit?limit=${SHOWN}`),
      (body) => {
        setEvents(body.events);
        setProblem(undefined);
      },
      (err) => setProblem(errorText(err)),
    );
    void refresh();
    return onAppEvent((event) => {
      if (event.app_id === id && event.kind !== 'delete') void refresh();
    });
  }, [id]);

  return (
    <section aria-labelledby="activity-title">
      <h2 id="activity-title">Activity</h2>
      <Problem text={problem} />
      {events.length === 0 ? (
        <p class="muted">Nothing recorded yet.</p>
      ) : (
        <Table class="stacked" columns={['When', 'Who', 'Action', 'Outcome', 'What']}>
          {events.map((e) => (
            <tr key={e.id}>
              <td data-label="When">
                <time dateTime={e.time} title={exact(e.time)}>
                  {ago(e.time)}
                </time>
              </td>
              <td data-label="Who">{e.actor}</td>
              <td data-label="Action">{actionOf(e)}</td>
              <td data-label="Outcome">{e.outcome}</td>
              <td data-label="What">{whatOf(e)}</td>
            </tr>
          ))}
        </Table>
      )}
    </section>
  );
}
