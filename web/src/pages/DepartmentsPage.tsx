import { useEffect, useState } from 'preact/hooks';
import { api, errorText } from '../lib/api';
import type { Department } from '../lib/types';
import { ConfirmButton } from '../components/Confirm';

export function DepartmentsPage() {
  const [departments, setDepartments] = useState<Department[]>([]);
  const [id, setId] = useState('');
  const [name, setName] = useState('');
  const [problem, setProblem] = useState<string>();

  const load = () =>
    api<{ items: Department[] }>('/api/departments')
      .then((body) => setDepartments(body.items))
      .catch((err: unknown) => setProblem(errorText(err)));
  useEffect(() => void load(), []);

  const run = async (work: () => Promise<unknown>) => {
    setProblem(undefined);
    try {
      await work();
      await load();
    } catch (err) {
      setProblem(errorText(err));
    }
  };

  return (
    <>
      <h1>Departments</h1>
      <form
        class="row"
        onSubmit={(e) => {
          e.preventDefault();
          void run(async () => {
            await api('/api/departments', {
              method: 'POST',
              json: { id, ...(name ? { name } : {}) },
            });
            setId('');
            setName('');
          });
        }}
      >
        <label>
          Id
          <input
            required
            pattern="[a-z0-9]([a-z0-9\-]*[a-z0-9])?"
            maxLength={63}
            value={id}
            onInput={(e) => setId(e.currentTarget.value)}
          />
        </label>
        <label>
          Name
          <input value={name} onInput={(e) => setName(e.currentTarget.value)} />
        </label>
        <button type="submit" class="primary">
          Create department
        </button>
      </form>
      {problem && (
        <p class="error" role="alert">
          {problem}
        </p>
      )}
      {departments.length === 0 ? (
        <p>No departments yet.</p>
      ) : (
        <ul class="links">
          {departments.map((d) => (
            <li key={d.id}>
              <strong>{d.id}</strong> {d.name && d.name !== d.id ? d.name : ''}{' '}
              {d.description && <span class="muted">{d.description}</span>}{' '}
              <ConfirmButton
                label="Delete"
                question={`Delete department ${d.id}?`}
                confirm="Delete"
                danger
                onConfirm={() =>
                  void run(() => api(`/api/departments/${d.id}`, { method: 'DELETE' }))
                }
              />
            </li>
          ))}
        </ul>
      )}
    </>
  );
}
