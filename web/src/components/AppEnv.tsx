import { useState } from 'preact/hooks';
import { api, errorText } from '../lib/api';
import type { AppView } from '../lib/types';
import { EnvFields, type EnvRow } from './EnvFields';
import { Problem } from './Problem';

/**
 * The app's environment: the names it runs with, each removable, and new values to set. Values are
 * write-only: the server never shows them, so a name's value is replaced, never edited. Saving
 * makes a config release (PATCH /v1/apps/{id}): a new version of the live source.
 */
export function AppEnv({ app, onSaved }: { app: AppView; onSaved: (app: AppView) => void }) {
  const [rows, setRows] = useState<EnvRow[]>([]);
  const [removed, setRemoved] = useState<string[]>([]);
  const [saving, setSaving] = useState(false);
  const [problem, setProblem] = useState<string>();
  const [done, setDone] = useState<string>();

  const set = rows.filter((row) => row.name.trim() !== '');
  const changed = set.length > 0 || removed.length > 0;
  const toggle = (name: string) =>
    setRemoved(removed.includes(name) ? removed.filter((n) => n !== name) : [...removed, name]);

  const save = async (event: Event) => {
    event.preventDefault();
    setProblem(undefined);
    setDone(undefined);
    setSaving(true);
    try {
      const env = {
        ...(set.length ? { set: set.map((r) => ({ name: r.name.trim(), value: r.value })) } : {}),
        ...(removed.length ? { unset: removed } : {}),
      };
      const view = await api<AppView>(`/v1/apps/${app.app_id}`, { method: 'PATCH', json: { env } });
      setRows([]);
      setRemoved([]);
      setDone(`Saved as version ${view.last_deploy?.version ?? '-'} (${view.phase}).`);
      onSaved(view);
    } catch (err) {
      setProblem(errorText(err));
    } finally {
      setSaving(false);
    }
  };

  return (
    <section aria-labelledby="env-title">
      <h2 id="env-title">Environment</h2>
      <p class="muted">
        Values are write-only: they are never shown again. Saving releases the live source again
        with the new environment; the version serving now keeps serving if the new one fails.
      </p>
      <form onSubmit={save}>
        {app.env.length === 0 ? (
          <p data-testid="env-names">No variables.</p>
        ) : (
          <ul class="env-names" data-testid="env-names">
            {app.env.map(({ name }) => (
              <li key={name}>
                <label class="check">
                  <input
                    type="checkbox"
                    checked={removed.includes(name)}
                    onChange={() => toggle(name)}
                  />
                  <span>
                    <code>{name}</code> <span class="muted">remove</span>
                  </span>
                </label>
              </li>
            ))}
          </ul>
        )}
        <EnvFields rows={rows} onChange={setRows} legend="Set variables (new or replaced values)" />
        <Problem text={problem} />
        {done ? (
          <p role="status" data-testid="env-saved">
            {done}
          </p>
        ) : null}
        <button type="submit" disabled={!changed || saving} aria-busy={saving}>
          {saving ? 'Saving…' : 'Save environment'}
        </button>
      </form>
    </section>
  );
}
