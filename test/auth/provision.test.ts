import { describe, expect, it } from 'vitest';
import { loadOrProvision } from '../../src/auth/provision.js';
import { AppError } from '../../src/errors.js';
import type { Store, UserRecord } from '../../src/persistence/store.js';

const principal = {
  userId: 'apikey-flaky',
  name: 'flaky',
  role: 'admin' as const,
  scopes: [],
  department: 'ops',
};

/** A store whose user calls fail `failures` times before working (unit test of one module only). */
function flakyStore(failures: number) {
  const users = new Map<string, UserRecord>();
  let calls = 0;
  const store = {
    getUser(id: string) {
      calls += 1;
      if (calls <= failures) throw new Error('SQLITE_BUSY: database is locked');
      return users.get(id);
    },
    ensureUser(user: UserRecord) {
      const existing = users.get(user.id);
      if (existing) return existing;
      users.set(user.id, user);
      return user;
    },
  };
  return { store: store as unknown as Store, users, calls: () => calls };
}

describe('loadOrProvision', () => {
  it('creates the record from the principal on first sight', async () => {
    const { store, users } = flakyStore(0);
    const record = await loadOrProvision(store, principal);
    expect(record).toMatchObject({
      id: 'apikey-flaky',
      name: 'flaky',
      role: 'admin',
      status: 'active',
      department: 'ops',
    });
    expect(users.get('apikey-flaky')).toBe(record);
  });

  it('keeps the stored record (the truth after provisioning)', async () => {
    const { store, users } = flakyStore(0);
    users.set('apikey-flaky', {
      id: 'apikey-flaky',
      name: 'flaky',
      role: 'user',
      status: 'suspended',
      createdAt: 'a',
      updatedAt: 'b',
    });
    const record = await loadOrProvision(store, principal);
    expect(record.role).toBe('user');
    expect(record.status).toBe('suspended');
  });

  it('retries a failing store with backoff until it works', async () => {
    const { store, calls } = flakyStore(3);
    const waits: number[] = [];
    const record = await loadOrProvision(store, principal, {
      sleep: async (ms) => {
        waits.push(ms);
      },
      random: () => 0.999,
    });
    expect(record.id).toBe('apikey-flaky');
    expect(calls()).toBe(4);
    expect(waits).toEqual([25, 50, 100]);
  });

  it('spreads each wait over its upper half, so users failing together retry apart', async () => {
    const waits: number[] = [];
    await loadOrProvision(flakyStore(3).store, principal, {
      sleep: async (ms) => {
        waits.push(ms);
      },
      random: () => 0,
    });
    expect(waits).toEqual([13, 25, 50]);
  });

  it('gives up with 503 not_ready when the store keeps failing within the budget', async () => {
    const { store } = flakyStore(Number.POSITIVE_INFINITY);
    const started = Date.now();
    const failure = loadOrProvision(store, principal, { budgetMs: 300 });
    await expect(failure).rejects.toBeInstanceOf(AppError);
    await expect(failure).rejects.toMatchObject({ status: 503, code: 'not_ready' });
    expect(Date.now() - started).toBeGreaterThanOrEqual(250);
    expect(Date.now() - started).toBeLessThan(2000);
  });

  it('gives up with 503 storage_unavailable naming the database when the disk is full', async () => {
    const users = new Map<string, UserRecord>();
    const full = {
      getUser: (id: string) => users.get(id),
      ensureUser: () => {
        throw Object.assign(new Error('database or disk is full'), { code: 'SQLITE_FULL' });
      },
    } as unknown as Store;
    const failure = loadOrProvision(full, principal, { budgetMs: 100 });
    await expect(failure).rejects.toMatchObject({
      status: 503,
      code: 'storage_unavailable',
      message: 'the database cannot write: the disk is full; retry once space is freed',
      details: { store: 'database', retryAfterSeconds: 5 },
    });
  });
});
