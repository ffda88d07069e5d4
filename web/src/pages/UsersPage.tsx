import { useEffect, useState } from 'preact/hooks';
import { api, errorText } from '../lib/api';
import type { Department, User } from '../lib/types';
import { CopyButton } from '../components/CopyButton';

/** Users: create (the new key shows once), suspend or reactivate, role and department. */
export function UsersPage() {
  const [users, setUsers] = useState<User[]>([]);
  const [departments, setDepartments] = useState<Department[]>([]);
  const [name, setName] = useState('');
  const [role, setRole] = useState('user');
  const [created, setCreated] = useState<{ name: string; key: string }>();
  const [problem, setProblem] = useState<string>();

  const load = () =>
    Promise.all([
      api<{ items: User[] }>('/api/users'),
      api<{ items: Department[] }>('/api/departments'),
    ])
      .then(([u, d]) => {
        setUsers(u.items);
        setDepartments(d.items);
      })
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
        <label>
          Name
          <input
            required
            pattern="[A-Za-z0-9][A-Za-z0-9._\-]{0,62}"
            value={name}
            onInput={(e) => setName(e.currentTarget.value)}
          />
        </label>
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
      {problem && (
        <p class="error" role="alert">
          {problem}
        </p>
      )}
      <div class="table-wrap">
        <table>
          <thead>
            <tr>
              <th scope="col">User</th>
              <th scope="col">Role</th>
              <th scope="col">Department</th>
              <th scope="col">Status</th>
            </tr>
          </thead>
          <tbody>
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
          </tbody>
        </table>
      </div>
    </>
  );
}
