import type { V1ConfigMap } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openConfigMapStore } from '../../src/persistence/configmap/configmap-store.js';
import { guardStore } from '../../src/persistence/guarded-store.js';
import { StorageHealth } from '../../src/persistence/storage-health.js';
import type { Store } from '../../src/persistence/store.js';
import { BOOTSTRAP_ADMIN_ID, ensureBootstrapAdmin } from '../../src/auth/bootstrap.js';
import { hashApiKey } from '../../src/auth/keys.js';
import { loadConfig } from '../../src/config/load.js';
import { app, audit, department, user, version } from '../persistence/fixtures.js';
import { storeContract } from '../persistence/store-contract.js';
import { startCluster, waitFor, type Cluster } from './cluster.js';
import {
  freshNamespace,
  grantConfigMaps,
  kubeConfigFor,
  serviceAccountToken,
  startRelay,
} from './configmap-support.js';

/**
 * The configmap store on a real kube-apiserver: the same contract as memory and SQLite (each case
 * in its own namespace, and what landed in the API read back by a second store after each case),
 * then what only this backend does: other replicas' changes through the watch, conflicts, a
 * restart, and an API that refuses or cannot be reached.
 */
let cluster: Cluster;
const opened: Store[] = [];
type Line = { level: string; msg: string; extra?: object };

beforeAll(async () => {
  cluster = await startCluster();
});
afterAll(async () => {
  for (const s of opened) s.close();
  await cluster?.stop();
});

async function open(
  namespace: string,
  opts: { token?: string; server?: string; requestTimeoutMs?: number } = {},
) {
  const lines: Line[] = [];
  const store = await openConfigMapStore({
    kubeConfig: kubeConfigFor(cluster, opts),
    namespace,
    log: (level, msg, extra) => lines.push({ level, msg, extra }),
    requestTimeoutMs: opts.requestTimeoutMs ?? 5_000,
  });
  opened.push(store);
  return { store, lines };
}

/** Everything a store holds that lasts: what a restart must bring back. */
function lasting(s: Store) {
  const apps = s.listApps({}).items;
  return {
    apps,
    versions: apps.map((a) => s.listVersions(a.id)),
    users: s.listUsers(),
    departments: s.listDepartments(),
  };
}

const configMaps = async (namespace: string): Promise<V1ConfigMap[]> =>
  (
    await cluster.api.must<{ items: V1ConfigMap[] }>(
      'GET',
      `/api/v1/namespaces/${namespace}/configmaps?labelSelector=app.kubernetes.io/managed-by%3Dslipway`,
    )
  ).items;

const appJson = async (namespace: string, id: string) => {
  const cm = await cluster.api.must<V1ConfigMap>(
    'GET',
    `/api/v1/namespaces/${namespace}/configmaps/slipway-app-${id}`,
  );
  return JSON.parse(cm.data?.['app.json'] ?? '{}') as Record<string, unknown>;
};

const userJson = async (namespace: string, id: string) => {
  const cm = await cluster.api.must<V1ConfigMap>(
    'GET',
    `/api/v1/namespaces/${namespace}/configmaps/slipway-user-${id}`,
  );
  return JSON.parse(cm.data?.['user.json'] ?? '{}') as Record<string, unknown>;
};

describe('store contract: configmap', () => {
  storeContract(async () => {
    const namespace = await freshNamespace(cluster, 'contract');
    const { store } = await open(namespace);
    return {
      store,
      async cleanup() {
        // A case that closed its store has nothing more to show.
        if (store.ping()) {
          await store.flush?.();
          const { store: again } = await open(namespace);
          expect(lasting(again)).toEqual(lasting(store));
          again.close();
          store.close();
        }
        await cluster.api.delete(`/api/v1/namespaces/${namespace}`);
      },
    };
  });
});

describe('configmap store on the test cluster', () => {
  it('stores each app with its versions in one labelled ConfigMap, and deletes it with the app', async () => {
    const ns = await freshNamespace(cluster);
    const { store } = await open(ns);
    store.putApp(app('web'));
    store.addVersion(version('web', 1));
    store.addVersion(version('web', 2));
    store.putUser(user('carol', { apiKeyHash: 'h-carol' }));
    await store.flush?.();
    const listed = await configMaps(ns);
    expect(listed.map((cm) => cm.metadata?.name).sort()).toEqual([
      'slipway-app-web',
      'slipway-user-carol',
    ]);
    const web = listed.find((cm) => cm.metadata?.name === 'slipway-app-web');
    expect(web?.metadata?.labels?.['slipway.dev/kind']).toBe('app');
    expect(JSON.parse(web?.data?.['versions.json'] ?? '[]')).toHaveLength(2);
    // The whole record as JSON: a field the record gains is carried as it is.
    expect((await appJson(ns, 'web')).phase).toBe('Ready');
    // Only the key's hash is stored, as in SQLite.
    const carol = listed.find((cm) => cm.metadata?.name === 'slipway-user-carol');
    expect(JSON.parse(carol?.data?.['user.json'] ?? '{}')).toMatchObject({ apiKeyHash: 'h-carol' });

    store.deleteApp('web');
    await store.flush?.();
    expect((await configMaps(ns)).map((cm) => cm.metadata?.name)).toEqual(['slipway-user-carol']);
  });

  it('refuses a record that would not fit in one ConfigMap, leaving the mirror unchanged', async () => {
    const ns = await freshNamespace(cluster);
    const { store } = await open(ns);
    store.putApp(app('web'));
    const huge = [{ name: 'BIG', value: 'x'.repeat(1024 * 1024) }];
    expect(() => store.putApp(app('web', { env: huge }))).toThrow(
      expect.objectContaining({ code: 'KUBE_TOO_LARGE' }),
    );
    expect(store.getApp('web')).toEqual(app('web'));
    const health = new StorageHealth({
      probes: { database: () => undefined, 'source store': () => undefined },
    });
    expect(() => guardStore(store, health).putApp(app('web', { env: huge }))).toThrow(
      expect.objectContaining({ status: 503, code: 'storage_unavailable' }),
    );
    health.stop();
    await store.flush?.();
    expect((await appJson(ns, 'web')).env).toEqual(app('web').env);
  });

  it('a second store sees what the first one changes, and a change made by hand, through the watch', async () => {
    const ns = await freshNamespace(cluster);
    const { store: a } = await open(ns);
    const { store: b } = await open(ns);
    a.putApp(app('web'));
    a.addVersion(version('web', 1));
    a.putUser(user('carol', { apiKeyHash: 'h-carol' }));
    a.putDepartment(department('eng'));
    await a.flush?.();
    await waitFor(
      'b sees web, carol and eng',
      async () =>
        b.listVersions('web').length === 1 &&
        b.findUserByKeyHash('h-carol')?.id === 'carol' &&
        b.getDepartment('eng') !== undefined,
    );
    expect(b.getApp('web')).toEqual(app('web'));

    // The other way round, and deletes too.
    b.putApp(app('api', { ownerId: 'bob' }));
    b.deleteUser('carol');
    await b.flush?.();
    await waitFor(
      'a sees api and no carol',
      async () => a.getApp('api')?.ownerId === 'bob' && a.getUser('carol') === undefined,
    );

    // By hand: a person edits the ConfigMap.
    await cluster.api.patch(`/api/v1/namespaces/${ns}/configmaps/slipway-app-web`, {
      data: { 'app.json': JSON.stringify(app('web', { phase: 'Suspended' })) },
    });
    await waitFor(
      'both see the hand edit',
      async () => a.getApp('web')?.phase === 'Suspended' && b.getApp('web')?.phase === 'Suspended',
    );
    expect(a.listVersions('web')).toEqual([version('web', 1)]);
  });

  it('a conflicting write (the resourceVersion moved on) is retried over the current object and lands', async () => {
    const ns = await freshNamespace(cluster);
    const { store: a, lines: aLines } = await open(ns);
    const { store: b, lines: bLines } = await open(ns);
    a.putApp(app('web'));
    await a.flush?.();
    await waitFor('b has web', async () => b.getApp('web') !== undefined);
    // Same turn: both replace with the resourceVersion they know; the API takes one, the other
    // gets 409 Conflict, re-reads and puts its record over it.
    a.putApp(app('web', { phase: 'Suspended', reason: 'from-a' }));
    b.putApp(app('web', { phase: 'Failed', reason: 'from-b' }));
    await Promise.all([a.flush?.(), b.flush?.()]);
    const conflicted = [aLines, bLines].map((lines) =>
      lines.some((l) => l.msg.includes('changed elsewhere meanwhile')),
    );
    expect(conflicted.filter(Boolean)).toHaveLength(1);
    // The one that conflicted wrote last: its record is what the API holds.
    const expected = conflicted[0] ? 'from-a' : 'from-b';
    expect((await appJson(ns, 'web')).reason).toBe(expected);
    await waitFor(
      'both mirrors agree with the API',
      async () => a.getApp('web')?.reason === expected && b.getApp('web')?.reason === expected,
    );
  });

  it('two stores inserting the same new user at once keep the first that landed, and the bootstrap admin is made once', async () => {
    const ns = await freshNamespace(cluster);
    const { store: a, lines: aLines } = await open(ns);
    const { store: b, lines: bLines } = await open(ns);
    // Same turn, neither has seen the other's: both insert; the API creates one, the other
    // store gets 409 and takes the one that was created, as a unique insert would have found it.
    a.ensureUser(user('carol', { name: 'from-a' }));
    b.ensureUser(user('carol', { name: 'from-b' }));
    await Promise.all([a.flush?.(), b.flush?.()]);
    const yielded = [aLines, bLines].map((lines) =>
      lines.some((l) => l.msg.includes('created by another replica first')),
    );
    expect(yielded.filter(Boolean)).toHaveLength(1);
    const kept = yielded[0] ? 'from-b' : 'from-a';
    expect((await userJson(ns, 'carol')).name).toBe(kept);
    expect([a.getUser('carol')?.name, b.getUser('carol')?.name]).toEqual([kept, kept]);

    // Two replicas making the bootstrap admin on an empty store: one key, shown by one of them.
    const config = loadConfig({});
    const made = await Promise.all([
      ensureBootstrapAdmin(config, a),
      ensureBootstrapAdmin(config, b),
    ]);
    const created = made.filter((r) => r.kind === 'created');
    expect(made.map((r) => r.kind).sort()).toEqual(['created', 'exists']);
    const key = created[0]?.kind === 'created' ? created[0].apiKey : '';
    const hash = (await userJson(ns, BOOTSTRAP_ADMIN_ID)).apiKeyHash;
    expect(hash).toBe(hashApiKey(key));
    await waitFor(
      'both mirrors hold the shown key',
      async () =>
        a.getUser(BOOTSTRAP_ADMIN_ID)?.apiKeyHash === hash &&
        b.getUser(BOOTSTRAP_ADMIN_ID)?.apiKeyHash === hash,
    );
  });

  it('reopened after close() (a restart) it has every app, version, user and department; not the audit trail', async () => {
    const ns = await freshNamespace(cluster);
    const { store: before } = await open(ns);
    for (const id of ['web', 'api', 'docs']) {
      before.putApp(app(id));
      for (let n = 1; n <= 3; n++) before.addVersion(version(id, n, { outcome: 'Ready' }));
    }
    before.setVersionOutcome('api', 3, { outcome: 'Failed', reason: 'AppExited' });
    before.pruneVersions('docs', 1);
    before.putUser(user('carol', { apiKeyHash: 'h-carol' }));
    before.ensureUser(user('dave'));
    before.putDepartment(department('eng', { description: 'builders' }));
    before.setMeta('agent_token_hash', 'abc');
    before.appendAudit(audit('e1', '2025-01-01T00:00:01.000Z'));
    const held = lasting(before);
    await before.flush?.();
    before.close();

    const { store: after } = await open(ns);
    expect(lasting(after)).toEqual(held);
    expect(after.listVersions('docs').map((v) => v.version)).toEqual([3]);
    expect(after.getVersion('api', 3)).toMatchObject({ outcome: 'Failed', reason: 'AppExited' });
    expect(after.findUserByKeyHash('h-carol')?.id).toBe('carol');
    expect(after.getMeta('agent_token_hash')).toBe('abc');
    // The spec: with the configmap backend the audit trail is in memory, lost on restart.
    expect(after.listAudit({ limit: 10 })).toEqual([]);
  });

  it('without RBAC rights to write, the store reports down and refuses changes; they land once granted', async () => {
    const ns = await freshNamespace(cluster);
    const token = await serviceAccountToken(cluster, ns, 'slipway');
    await grantConfigMaps(cluster, ns, 'slipway', 'read', ['get', 'list', 'watch']);
    const { store } = await open(ns, { token });
    const health = new StorageHealth({
      probes: {
        database: () => store.setMeta('write_probe', new Date().toISOString()),
        'source store': () => undefined,
      },
      probeEveryMs: 100,
    });
    const guarded = guardStore(store, health);
    try {
      guarded.putApp(app('web'));
      await expect(store.flush?.()).rejects.toMatchObject({
        status: 503,
        code: 'storage_unavailable',
        message: expect.stringMatching(/Kubernetes API answered 403/) as unknown,
      });
      expect(store.ping()).toBe(false);
      expect(health.check('database').ok).toBe(false);
      // New changes are refused as on a full disk: 503 storage_unavailable, nothing changed.
      expect(() => guarded.putApp(app('api'))).toThrow(
        expect.objectContaining({ status: 503, code: 'storage_unavailable' }),
      );
      expect(store.getApp('api')).toBeUndefined();
      expect((await configMaps(ns)).length).toBe(0);

      await grantConfigMaps(cluster, ns, 'slipway', 'write', [
        'create',
        'update',
        'patch',
        'delete',
      ]);
      await waitFor('the queued write lands', async () => store.ping(), 30_000);
      await store.flush?.();
      expect((await appJson(ns, 'web')).id).toBe('web');
      await waitFor('health is back', async () => health.check('database').ok, 10_000);
      guarded.putApp(app('api'));
      await store.flush?.();
      expect((await appJson(ns, 'api')).id).toBe('api');
    } finally {
      health.stop();
    }
  });

  it('with the API server unreachable, writes keep pending and the store is down; they land when it is back', async () => {
    const ns = await freshNamespace(cluster);
    const relay = await startRelay(cluster);
    const { store, lines } = await open(ns, { server: relay.server });
    store.putApp(app('web'));
    store.putUser(user('erin'));
    await store.flush?.();

    await relay.cut();
    // Meanwhile another replica, which still reaches the API, deletes one object and adds one.
    const { store: other } = await open(ns);
    other.deleteUser('erin');
    other.putDepartment(department('ops'));
    await other.flush?.();
    store.putApp(app('web', { phase: 'Suspended' }));
    store.addVersion(version('web', 1));
    const pending = store.flush?.();
    await expect(pending).rejects.toMatchObject({ status: 503, code: 'storage_unavailable' });
    expect(store.ping()).toBe(false);
    expect(() => store.putApp(app('api'))).toThrow(
      expect.objectContaining({ code: 'KUBE_UNAVAILABLE' }),
    );
    await expect(store.flush?.()).rejects.toMatchObject({ code: 'storage_unavailable' });
    // Still the old record in the API: nothing landed meanwhile.
    expect((await appJson(ns, 'web')).phase).toBe('Ready');
    expect(lines.some((l) => l.msg.includes('cannot write'))).toBe(true);

    await relay.open();
    await waitFor('the store writes again', async () => store.ping(), 30_000);
    await store.flush?.();
    expect((await appJson(ns, 'web')).phase).toBe('Suspended');
    const cm = await cluster.api.must<V1ConfigMap>(
      'GET',
      `/api/v1/namespaces/${ns}/configmaps/slipway-app-web`,
    );
    expect(JSON.parse(cm.data?.['versions.json'] ?? '[]')).toEqual([version('web', 1)]);
    // The watch came back too: a hand edit reaches the mirror again.
    await cluster.api.patch(`/api/v1/namespaces/${ns}/configmaps/slipway-app-web`, {
      data: { 'app.json': JSON.stringify(app('web', { phase: 'Failed' })) },
    });
    await waitFor('the watch resumed', async () => store.getApp('web')?.phase === 'Failed', 30_000);
    // The re-list after the drop brought in what changed while the store could not watch.
    expect(store.getUser('erin')).toBeUndefined();
    expect(store.getDepartment('ops')).toEqual(department('ops'));
    await relay.cut();
  });

  it('does not open without the API: a clear error naming the namespace and why', async () => {
    const ns = await freshNamespace(cluster);
    const token = await serviceAccountToken(cluster, ns, 'nobody');
    await expect(open(ns, { token })).rejects.toThrow(
      `configmap store: cannot list the ConfigMaps in namespace ${ns}: the Kubernetes API answered 403`,
    );
    const relay = await startRelay(cluster);
    await relay.cut();
    await expect(open(ns, { server: relay.server })).rejects.toThrow(
      /cannot list the ConfigMaps in namespace .*: the Kubernetes API is unreachable \(ECONNREFUSED\)/,
    );
  });

  it('a call the API server never answers is cut at the timeout: down, then the write lands', async () => {
    const ns = await freshNamespace(cluster);
    const relay = await startRelay(cluster);
    const { store } = await open(ns, { server: relay.server, requestTimeoutMs: 1_000 });
    relay.hang();
    store.putApp(app('web'));
    await expect(store.flush?.()).rejects.toMatchObject({
      status: 503,
      code: 'storage_unavailable',
      message: expect.stringMatching(/did not answer in time/) as unknown,
    });
    expect(store.ping()).toBe(false);
    await relay.open();
    await waitFor('the write lands', async () => store.ping(), 30_000);
    await store.flush?.();
    expect((await appJson(ns, 'web')).id).toBe('web');
    await relay.cut();
  });

  it('leaves alone a ConfigMap of ours it cannot read, at open and through the watch', async () => {
    const ns = await freshNamespace(cluster);
    const broken = (name: string) => ({
      metadata: {
        name,
        labels: { 'app.kubernetes.io/managed-by': 'slipway', 'slipway.dev/kind': 'app' },
        annotations: { 'slipway.dev/id': name.slice('slipway-app-'.length) },
      },
      data: { 'app.json': '{not json' },
    });
    await cluster.api.must(
      'POST',
      `/api/v1/namespaces/${ns}/configmaps`,
      broken('slipway-app-bad'),
    );
    const { store, lines } = await open(ns);
    store.putApp(app('web'));
    await store.flush?.();
    await cluster.api.must(
      'POST',
      `/api/v1/namespaces/${ns}/configmaps`,
      broken('slipway-app-worse'),
    );
    await waitFor(
      'the watch saw it',
      async () => lines.filter((l) => l.msg.includes('cannot read')).length >= 2,
    );
    expect(store.listApps({}).items.map((a) => a.id)).toEqual(['web']);
    expect(store.ping()).toBe(true);
  });
});
