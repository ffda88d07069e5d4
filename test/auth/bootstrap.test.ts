import { afterEach, describe, expect, it, vi } from 'vitest';
import { call, json, removeDir, start, tempDataDir } from './helpers.js';

/** Runs a start while capturing what it prints on the console. */
async function startCapturing(dataDir: string) {
  const lines: string[] = [];
  const spy = vi.spyOn(console, 'log').mockImplementation((...args: unknown[]) => {
    lines.push(args.map(String).join(' '));
  });
  try {
    const s = await start({ identityCacheTTL: '0s' }, dataDir);
    return { s, lines };
  } finally {
    spy.mockRestore();
  }
}

describe('bootstrap admin', () => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const dir of dirs.splice(0)) removeDir(dir);
  });

  it('is created once with a printed key that works, and never re-created or re-printed', async () => {
    const dataDir = tempDataDir();
    dirs.push(dataDir);
    const first = await startCapturing(dataDir);
    let key: string;
    try {
      const keyLines = first.lines.filter((line) => /slw_[A-Za-z0-9_-]{43}/.test(line));
      expect(keyLines.length).toBeGreaterThan(0);
      key = /slw_[A-Za-z0-9_-]{43}/.exec(keyLines[0] as string)?.[0] as string;
      expect(first.lines.join('\n')).toContain(
        `curl -H "Authorization: Bearer ${key}" ${first.s.baseURL}/api/whoami`,
      );
      expect(first.lines.join('\n')).toContain(`the dashboard at ${first.s.baseURL}/`);

      const me = await call(first.s.baseURL, '/api/whoami', { token: key });
      expect(me.status).toBe(200);
      expect(json(me.body)).toMatchObject({ user_id: 'apikey-admin', role: 'admin' });
      const stored = first.s.app.store.getUser('apikey-admin');
      expect(stored?.apiKeyHash).toMatch(/^[0-9a-f]{64}$/);
      expect(JSON.stringify(stored)).not.toContain(key);
    } finally {
      await first.s.close();
    }

    const second = await startCapturing(dataDir);
    try {
      const output = second.lines.join('\n');
      expect(output).not.toMatch(/slw_/);
      expect(output).toMatch(/bootstrap admin apikey-admin exists/);
      expect(output).toMatch(/SVC_AUTH_API_KEY/);
      // The first key still works: nothing was re-created.
      expect((await call(second.s.baseURL, '/api/whoami', { token: key })).status).toBe(200);
      // Deleting the user is how an operator gets a new key on the next start.
      const del = await call(second.s.baseURL, '/api/users/apikey-admin', {
        token: key,
        method: 'DELETE',
      });
      expect(del.status).toBe(204);
    } finally {
      await second.s.close();
    }

    const third = await startCapturing(dataDir);
    try {
      const fresh = /slw_[A-Za-z0-9_-]{43}/.exec(third.lines.join('\n'))?.[0];
      expect(fresh).toBeDefined();
      expect(fresh).not.toBe(key);
      expect((await call(third.s.baseURL, '/api/whoami', { token: key })).status).toBe(401);
      expect((await call(third.s.baseURL, '/api/whoami', { token: fresh as string })).status).toBe(
        200,
      );
    } finally {
      await third.s.close();
    }
  });

  it('is not created when a key is configured', async () => {
    const lines: string[] = [];
    const spy = vi.spyOn(console, 'log').mockImplementation((...args: unknown[]) => {
      lines.push(args.map(String).join(' '));
    });
    const s = await start({ apiKeys: [{ key: 'configured-key', name: 'ops', role: 'admin' }] });
    spy.mockRestore();
    dirs.push(s.dataDir);
    try {
      expect(lines.join('\n')).not.toMatch(/bootstrap/);
      expect(s.app.store.getUser('apikey-admin')).toBeUndefined();
    } finally {
      await s.close();
    }
  });
});
