import { expect, it } from 'vitest';
import type { Store } from '../../src/persistence/store.js';
import { app, audit, user, version } from './fixtures.js';

/** Contract cases for the audit trail, meta, transactions and copy semantics. */
export function trailCases(store: () => Store): void {
  it('lists audit events newest first, ties in insertion order, with filters and limit', () => {
    const s = store();
    s.appendAudit(audit('e1', '2025-01-01T00:00:01.000Z'));
    s.appendAudit(audit('e3', '2025-01-01T00:00:03.000Z', { actor: 'bob', target: 'api' }));
    s.appendAudit(audit('e2', '2025-01-01T00:00:02.000Z', { action: 'delete' }));
    s.appendAudit(audit('e4', '2025-01-01T00:00:03.000Z', { action: 'suspend' }));
    const ids = (q: Parameters<Store['listAudit']>[0]) => s.listAudit(q).map((e) => e.id);
    expect(ids({ limit: 10 })).toEqual(['e4', 'e3', 'e2', 'e1']);
    expect(ids({ limit: 2 })).toEqual(['e4', 'e3']);
    expect(ids({ limit: 0 })).toEqual(['e4', 'e3', 'e2', 'e1']);
    expect(ids({ limit: 10, actor: 'bob' })).toEqual(['e3']);
    expect(ids({ limit: 10, action: 'delete' })).toEqual(['e2']);
    expect(ids({ limit: 10, app: 'web' })).toEqual(['e4', 'e2', 'e1']);
    expect(ids({ limit: 10, app: 'web', action: 'deploy' })).toEqual(['e1']);
    expect(ids({ limit: 10, actor: 'nobody' })).toEqual([]);
    expect(s.listAudit({ limit: 1, actor: 'bob' })[0]).toEqual(
      audit('e3', '2025-01-01T00:00:03.000Z', { actor: 'bob', target: 'api' }),
    );
  });

  it("keeps an event's details, and filters on any of several actions and on a start time", () => {
    const s = store();
    const rollback = audit('e1', '2025-01-01T00:00:01.000Z', {
      details: { version: 3, rollback: { from: 2, to: 1 } },
    });
    s.appendAudit(rollback);
    s.appendAudit(audit('e2', '2025-01-01T00:00:02.000Z', { action: 'user.create', target: 'x' }));
    s.appendAudit(audit('e3', '2025-01-01T00:00:03.000Z', { action: 'suspend' }));
    expect(s.listAudit({ limit: 10, app: 'web', actions: ['deploy'] })).toEqual([rollback]);
    const ids = (q: Parameters<Store['listAudit']>[0]) => s.listAudit(q).map((e) => e.id);
    expect(ids({ limit: 10, actions: ['deploy', 'suspend'] })).toEqual(['e3', 'e1']);
    expect(ids({ limit: 10, since: '2025-01-01T00:00:02.000Z' })).toEqual(['e3', 'e2']);
    expect(ids({ limit: 10, actions: [] })).toEqual([]);
  });

  it('refuses a duplicate audit id', () => {
    const s = store();
    s.appendAudit(audit('e1', '2025-01-01T00:00:01.000Z'));
    expect(() => s.appendAudit(audit('e1', '2025-01-01T00:00:02.000Z'))).toThrow(/UNIQUE/);
    expect(s.listAudit({ limit: 10 })).toHaveLength(1);
  });

  it('gets and overwrites meta values', () => {
    const s = store();
    expect(s.getMeta('agent_token_hash')).toBeUndefined();
    s.setMeta('agent_token_hash', 'one');
    s.setMeta('agent_token_hash', 'two');
    s.setMeta('other', '');
    expect(s.getMeta('agent_token_hash')).toBe('two');
    expect(s.getMeta('other')).toBe('');
  });

  it('commits a transaction and returns its value', () => {
    const s = store();
    const out = s.transaction(() => {
      s.putApp(app('web'));
      s.addVersion(version('web', 1));
      return 42;
    });
    expect(out).toBe(42);
    expect(s.listVersions('web')).toHaveLength(1);
  });

  it('rolls every write back when the transaction throws', () => {
    const s = store();
    s.putApp(app('web', { phase: 'Pending' }));
    s.setMeta('k', 'before');
    expect(() =>
      s.transaction(() => {
        s.putApp(app('web', { phase: 'Ready' }));
        s.putApp(app('api'));
        s.addVersion(version('web', 1));
        s.putUser(user('bob'));
        s.appendAudit(audit('e1', '2025-01-01T00:00:01.000Z'));
        s.setMeta('k', 'after');
        throw new Error('boom');
      }),
    ).toThrow('boom');
    expect(s.getApp('web')?.phase).toBe('Pending');
    expect(s.getApp('api')).toBeUndefined();
    expect(s.listVersions('web')).toEqual([]);
    expect(s.getUser('bob')).toBeUndefined();
    expect(s.listAudit({ limit: 10 })).toEqual([]);
    expect(s.getMeta('k')).toBe('before');
  });

  it('rolls back only the inner transaction when its error is caught', () => {
    const s = store();
    s.transaction(() => {
      s.setMeta('outer', '1');
      expect(() =>
        s.transaction(() => {
          s.setMeta('inner', '1');
          throw new Error('inner');
        }),
      ).toThrow('inner');
    });
    expect(s.getMeta('outer')).toBe('1');
    expect(s.getMeta('inner')).toBeUndefined();
  });

  it('checks app references at commit, so order inside a transaction is free', () => {
    const s = store();
    s.transaction(() => {
      s.addVersion(version('web', 1));
      s.putApp(app('web'));
    });
    expect(s.listVersions('web')).toHaveLength(1);
    expect(() => s.transaction(() => s.addVersion(version('ghost', 1)))).toThrow(/FOREIGN KEY/);
    expect(s.listVersions('ghost')).toEqual([]);
  });

  it('refuses an async transaction body and keeps none of its writes', () => {
    const s = store();
    const body = async (): Promise<void> => {
      s.setMeta('k', 'v');
    };
    expect(() => s.transaction(body)).toThrow(/promise/);
    expect(s.getMeta('k')).toBeUndefined();
  });

  it('returns copies: mutating inputs or results never changes stored records', () => {
    const s = store();
    const input = app('web');
    s.putApp(input);
    input.env.push({ name: 'LEAK', value: 'x' });
    input.phase = 'Failed';
    const got = s.getApp('web');
    expect(got).toEqual(app('web'));
    if (got === undefined) throw new Error('app missing');
    got.env[0] = { name: 'A', value: 'changed' };
    got.allowedHosts.push('evil.com');
    s.listApps({}).items[0]?.env.push({ name: 'B', value: '2' });
    expect(s.getApp('web')).toEqual(app('web'));

    s.addVersion(version('web', 1));
    const v = s.listVersions('web')[0];
    if (v === undefined) throw new Error('version missing');
    v.sourceKey = 'tampered';
    expect(s.getVersion('web', 1)?.sourceKey).toBe(version('web', 1).sourceKey);

    const u = s.ensureUser(user('bob'));
    u.role = 'admin';
    expect(s.getUser('bob')?.role).toBe('user');
    const e = audit('e1', '2025-01-01T00:00:01.000Z');
    s.appendAudit(e);
    e.outcome = 'error';
    const listed = s.listAudit({ limit: 1 })[0];
    if (listed === undefined) throw new Error('event missing');
    listed.actor = 'mallory';
    expect(s.listAudit({ limit: 1 })[0]).toEqual(audit('e1', '2025-01-01T00:00:01.000Z'));
  });
}
