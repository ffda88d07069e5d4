import { describe, expect, it } from 'vitest';
import {
  applyToMirror,
  assertFits,
  configMapName,
  configMapOf,
  dataOf,
  keyOf,
  MAX_DATA_BYTES,
  objectKey,
} from '../../src/persistence/configmap/configmap-objects.js';
import { emptyState } from '../../src/persistence/memory-state.js';
import { app, department, user, version } from './fixtures.js';

/** How records map to ConfigMaps and back; the store over a real API is test/k8s. */
describe('configmap objects', () => {
  it('names a DNS-label id plainly and hashes any other, so no two ids share a name', () => {
    expect(configMapName(objectKey('app', 'web'))).toBe('slipway-app-web');
    const hashed = configMapName(objectKey('user', 'auth0|Alice@example.com'));
    expect(hashed).toMatch(/^slipway-user\.[0-9a-f]{40}$/);
    expect(configMapName(objectKey('user', 'Auth0|alice@example.com'))).not.toBe(hashed);
    expect(configMapName(objectKey('meta', 'write_probe'))).toMatch(/^slipway-meta\.[0-9a-f]{40}$/);
    expect(configMapName(objectKey('app', 'a'.repeat(64)))).toMatch(/^slipway-app\./);
  });

  it('round-trips an app with its versions, a user, a department and a meta value', () => {
    const from = emptyState();
    from.apps.set('web', app('web', { snapshot: '{"value":"Ready"}' }));
    from.versions.set('web', new Map([1, 2].map((n) => [n, version('web', n)])));
    from.users.set('u|1', user('u|1', { apiKeyHash: 'h' }));
    from.departments.set('eng', department('eng'));
    from.meta.set('write_probe', 't');
    const to = emptyState();
    for (const key of [
      objectKey('app', 'web'),
      objectKey('user', 'u|1'),
      objectKey('department', 'eng'),
      objectKey('meta', 'write_probe'),
    ]) {
      const cm = configMapOf(key, 'ns', dataOf(from, key) ?? {}, '7');
      expect(cm.metadata).toMatchObject({ namespace: 'ns', resourceVersion: '7' });
      expect(keyOf(cm)).toBe(key);
      applyToMirror(to, key, cm);
    }
    expect(to).toEqual(from);
    expect(JSON.parse(dataOf(from, objectKey('app', 'web'))?.['versions.json'] ?? '')).toEqual([
      version('web', 2),
      version('web', 1),
    ]);

    applyToMirror(to, objectKey('app', 'web'), undefined);
    expect(to.apps.has('web')).toBe(false);
    expect(to.versions.has('web')).toBe(false);
    expect(dataOf(to, objectKey('app', 'web'))).toBeUndefined();
  });

  it('refuses objects it cannot read, changing nothing', () => {
    const state = emptyState();
    const key = objectKey('app', 'web');
    const bad = (data: Record<string, string>) => configMapOf(key, 'ns', data);
    expect(() => applyToMirror(state, key, bad({ 'app.json': '{' }))).toThrow();
    expect(() =>
      applyToMirror(state, key, bad({ 'app.json': JSON.stringify(app('api')) })),
    ).toThrow(/not the record of web/);
    const foreign = JSON.stringify([version('api', 1)]);
    expect(() =>
      applyToMirror(
        state,
        key,
        bad({ 'app.json': JSON.stringify(app('web')), 'versions.json': foreign }),
      ),
    ).toThrow(/not one of its own/);
    expect(state.apps.size).toBe(0);
    expect(() =>
      keyOf({ metadata: { name: 'x', labels: { 'slipway.dev/kind': 'other' } } }),
    ).toThrow(/has no/);
  });

  it('says how big an object that would not fit in a ConfigMap is', () => {
    const state = emptyState();
    state.apps.set(
      'web',
      app('web', { env: [{ name: 'BIG', value: 'x'.repeat(MAX_DATA_BYTES) }] }),
    );
    expect(() => assertFits(state, objectKey('app', 'web'))).toThrow(
      expect.objectContaining({
        code: 'KUBE_TOO_LARGE',
        reason: expect.stringMatching(
          /^app web's record and versions would take \d+ bytes/,
        ) as unknown,
      }),
    );
    state.apps.set('web', app('web'));
    expect(() => assertFits(state, objectKey('app', 'web'))).not.toThrow();
  });
});
