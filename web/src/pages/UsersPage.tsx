import { useState } from 'preact/hooks';
import { api } from '../lib/api';
import { useReload } from '../lib/use-reload';
import type { Department, User } from '../lib/types';
import { CopyButton } from '../components/CopyButton';
import { Problem } from '../components/Problem';
import { Table } from '../components/Table';
import { TextField } from '../components/TextField';

/** Users: create (the new key shows once), suspend or reactivate, role and department. */
export function UsersPage() {
  const [users, setUsers] = useState<User[]>([]);
  const [departments, setDepartments] = useState<Department[]>([]);
  const [name, setName] = useState('');
  const [role, setRole] = useState('user');
  const [created, setCreated] = useState<{ name: string; key: string }>();
  const { problem, run } = useReload(() =>
    Promise.all([
      api<{ items: User[] }>('/api/users'),
      api<{ items: Department[] }>('/api/departments'),
    ]).then(([u, d]) => {
      setUsers(u.items);
      setDepartments(d.items);
    }),
  );

  const create = (event: Event) => {
    event.preventDefault();
    void run(async () => {
      const body = await api<{ user: User; api_key: string }>('/api/users', {
        method: 'POST',
        json: { name, role },
      });
      setCreated({ name: body.user.name, key: body.api_key });
      setName('');
    });
  };
  const patch = (user: User, json: Record<string, unknown>) =>
    run(() => api(`/api/users/${encodeURIComponent(user.id)}`, { method: 'PATCH', json }));

  return (
    <>
      <h1>Users</h1>
      <form class="row" onSubmit={create}>
        <TextField
          label="Name"
          required
          pattern="[A-Za-z0-9][A-Za-z0-9._\-]{0,62}"
          value={name}
          onValue={setName}
        />
        <label>
          Role
          <select value={role} onChange={(e) => setRole(e.currentTarget.value)}>
            <option value="user">user</option>
            <option value="admin">admin</option>
          </select>
        </label>
        <button type="submit" class="primary">
          Create user
        </button>
      </form>
      {created && (
        <div class="notice" role="status">
          <p>
            The API key of <strong>{created.name}</strong>. It is shown only this once:
          </p>
          <p>
            <code data-testid="new-key">{created.key}</code>{' '}
            <CopyButton text={created.key} label="Copy key" />
          </p>
          <button type="button" onClick={() => setCreated(undefined)}>
            I have stored it
          </button>
        </div>
      )}
      <Problem text={problem} />
      <Table columns={['User', 'Role', 'Department', 'Status']}>
        {users.map((user) => (
          <tr key={user.id} data-user={user.id}>
            <th scope="row">{user.id}</th>
            <td>
              <select
                aria-label={`Role of ${user.id}`}
                value={user.role}
                onChange={(e) => patch(user, { role: e.currentTarget.value })}
              >
                <option value="user">user</option>
                <option value="admin">admin</option>
              </select>
            </td>
            <td>
              <select
                aria-label={`Department of ${user.id}`}
                value={user.department ?? ''}
                onChange={(e) => patch(user, { department: e.currentTarget.value || null })}
              >
                <option value="">none</option>
                {departments.map((d) => (
                  <option key={d.id} value={d.id}>
                    {d.name || d.id}
                  </option>
                ))}
              </select>
            </td>
            <td>
              {user.status}{' '}
              <button
                type="button"
                onClick={() =>
                  patch(user, { status: user.status === 'suspended' ? 'active' : 'suspended' })
                }
              >
                {user.status === 'suspended' ? 'Reactivate' : 'Suspend'}
              </button>
            </td>
          </tr>
        ))}
      </Table>
    </>
  );
}
