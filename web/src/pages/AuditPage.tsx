import { useEffect, useState } from 'preact/hooks';
import { ADMIN_AUDIT_ACTIONS, APP_AUDIT_ACTIONS } from '../../../src/audit-actions';
import { api, errorText } from '../lib/api';
import { actionOf, whatOf } from '../lib/audit-text';
import { exact } from '../lib/format';
import type { AuditEvent } from '../lib/types';
import { Problem } from '../components/Problem';
import { Table } from '../components/Table';

const PAGE = 50;
const ACTIONS = [...APP_AUDIT_ACTIONS, ...ADMIN_AUDIT_ACTIONS];
/** The API's maximum; pages are cut from it here because the trail has no offset. */
const FETCH_LIMIT = 1_000;

interface Filters {
  actor: string;
  action: string;
  app: string;
}

export function AuditPage() {
  const [draft, setDraft] = useState<Filters>({ actor: '', action: '', app: '' });
  const [filters, setFilters] = useState<Filters>(draft);
  const [events, setEvents] = useState<AuditEvent[]>([]);
  const [page, setPage] = useState(0);
  const [problem, setProblem] = useState<string>();

  useEffect(() => {
    const query = new URLSearchParams({ limit: String(FETCH_LIMIT) });
    for (const [key, value] of Object.entries(filters)) if (value) query.set(key, value);
    setProblem(undefined);
    api<{ events: AuditEvent[] }>(`/v1/audit?${query}`)
      .then((body) => {
        setEvents(body.events);
        setPage(0);
      })
      .catch((err: unknown) => setProblem(errorText(err)));
  }, [filters]);

  const pages = Math.max(1, Math.ceil(events.length / PAGE));
  const shown = events.slice(page * PAGE, (page + 1) * PAGE);
  const field = (key: keyof Filters) => (e: { currentTarget: { value: string } }) =>
    setDraft({ ...draft, [key]: e.currentTarget.value });

  return (
    <>
      <h1>Audit trail</h1>
      <form
        class="filters"
        onSubmit={(e) => {
          e.preventDefault();
          setFilters({ ...draft });
        }}
      >
        <label>
          Actor
          <input value={draft.actor} onInput={field('actor')} />
        </label>
        <label>
          Action
          <select value={draft.action} onChange={field('action')}>
            <option value="">Any</option>
            {ACTIONS.map((a) => (
              <option key={a} value={a}>
                {a}
              </option>
            ))}
          </select>
        </label>
        <label>
          App
          <input value={draft.app} onInput={field('app')} />
        </label>
        <button type="submit">Filter</button>
      </form>
      <Problem text={problem} />
      <Table
        class="audit stacked"
        caption={'Audit events, newest first'}
        columns={['Time', 'Actor', 'Action', 'Target', 'Outcome', 'What']}
      >
        {shown.map((e) => (
          <tr key={e.id}>
            <td data-label="Time">
              <time dateTime={e.time}>{exact(e.time)}</time>
            </td>
            <td data-label="Actor">{e.actor}</td>
            <td data-label="Action">{actionOf(e)}</td>
            <td data-label="Target">{e.target}</td>
            <td data-label="Outcome">{e.outcome}</td>
            <td data-label="What">{whatOf(e)}</td>
          </tr>
        ))}
      </Table>
      {events.length === 0 && <p>No events match.</p>}
      <nav class="row" aria-label="Audit pages">
        <button type="button" disabled={page === 0} onClick={() => setPage(page - 1)}>
          Newer
        </button>
        <span>
          Page {page + 1} of {pages} ({events.length} events)
        </span>
        <button type="button" disabled={page + 1 >= pages} onClick={() => setPage(page + 1)}>
          Older
        </button>
      </nav>
    </>
  );
}
