import { useState } from 'preact/hooks';
import { api } from '../lib/api';
import { useReload } from '../lib/use-reload';
import type { Department } from '../lib/types';
import { ConfirmButton } from '../components/Confirm';
import { Problem } from '../components/Problem';
import { TextField } from '../components/TextField';

export function DepartmentsPage() {
  const [departments, setDepartments] = useState<Department[]>([]);
  const [id, setId] = useState('');
  const [name, setName] = useState('');
  const { problem, run } = useReload(() =>
    api<{ items: Department[] }>('/api/departments').then((body) => setDepartments(body.items)),
  );

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
        <TextField
          label="Id"
          required
          pattern="[a-z0-9]([a-z0-9\-]*[a-z0-9])?"
          maxLength={63}
          value={id}
          onValue={setId}
        />
        <TextField label="Name" value={name} onValue={setName} />
        <button type="submit" class="primary">
          Create department
        </button>
      </form>
      <Problem text={problem} />
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
