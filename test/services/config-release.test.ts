/**
 * Issue 28 items 1 and 2, the rules alone: what a redeploy keeps of the live release, and what a
 * change (PATCH /v1/apps/{id}, update_app) makes of a release.
 */
import { describe, expect, it } from 'vitest';
import type { Identity } from '../../src/auth/identity.js';
import { AppError } from '../../src/errors.js';
import type { Release } from '../../src/persistence/release.js';
import { applyChange, sameSettings, validateChange } from '../../src/services/app-change.js';
import { validateMetadata } from '../../src/services/deploy-metadata.js';
import { carriedRuntime, releaseRows } from '../../src/services/deploy-rows.js';
import type { Classification } from '../../src/sources/classify.js';
import { app } from '../persistence/fixtures.js';

const alice: Identity = {
  userId: 'alice',
  name: 'alice',
  role: 'user',
  scopes: [],
  mode: 'apikey',
};
const runs: Classification = {
  ok: true,
  lane: 'general',
  template: 'node',
  entrypoint: 'server.js',
  why: 'a package.json',
};
const live: Release = {
  lane: 'general',
  template: 'node',
  entrypoint: 'server.js',
  build: 'npx vite build',
  env: [
    { name: 'A', value: '1' },
    { name: 'B', value: '2' },
  ],
  allowedHosts: ['api.example.com'],
  ttl: '2h',
};

const rows = (metadata: Record<string, unknown>, withLive = true) =>
  releaseRows({
    metadata: validateMetadata({ name: 'web', ...metadata }),
    identity: alice,
    plan: runs,
    existing: app('web'),
    live: withLive ? live : undefined,
    version: 2,
    sourceKey: `web.v2.${'0'.repeat(32)}`,
    sourceHash: 'sha256:x',
    now: '2025-01-02T00:00:00.000Z',
    defaultAccess: 'public',
  });

const refusal = (fn: () => unknown): { field?: unknown; message: string } => {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(AppError);
    const e = err as AppError;
    expect([e.status, e.code]).toEqual([400, 'bad_request']);
    return { field: e.details?.field, message: e.message };
  }
  throw new Error('not refused');
};

describe('a redeploy keeps what it does not name', () => {
  it('takes env, egress and ttl from the live release; what it sends replaces them', () => {
    const kept = rows({});
    expect(kept.version).toMatchObject({
      env: live.env,
      allowedHosts: live.allowedHosts,
      ttl: '2h',
    });
    expect(kept.app).toMatchObject({ env: live.env, ttl: '2h' });
    const cleared = rows({ env: [], egress: { allowed_hosts: [] }, ttl: '5m' });
    expect(cleared.version).toMatchObject({ env: [], allowedHosts: [], ttl: '5m' });
    // `egress: {}` names the egress: no hosts; null names nothing.
    expect(rows({ egress: {} }).version.allowedHosts).toEqual([]);
    expect(rows({ env: null, egress: null, ttl: '' }).version).toMatchObject({
      env: live.env,
      allowedHosts: live.allowedHosts,
      ttl: '2h',
    });
  });

  it('gives a new app no env, no egress and the 30m ttl', () => {
    expect(rows({}, false).version).toMatchObject({ env: [], allowedHosts: [], ttl: '30m' });
  });

  it('asks again for the runtime the live release asked for, unless the deploy names one', () => {
    const asked = {
      overrides: { template: 'static', entrypoint: 'site/index.html' },
      build: 'make',
    };
    expect(carriedRuntime(undefined, asked)).toEqual({
      template: 'static',
      entrypoint: 'site/index.html',
      build: 'make',
    });
    expect(carriedRuntime({ lane: 'general' }, asked)).toEqual({ lane: 'general' });
    // `runtime: {}` asks for nothing: the classifier decides it all.
    expect(carriedRuntime({}, asked)).toEqual({});
    expect(carriedRuntime(undefined, { build: live.build })).toEqual({ build: 'npx vite build' });
    expect(carriedRuntime(undefined, undefined)).toEqual({});
  });

  it('records the overrides a deploy asked for on its version, none when it asked for none', () => {
    expect(rows({ runtime: { template: 'node', lane: 'general' } }).version.overrides).toEqual({
      template: 'node',
      lane: 'general',
    });
    expect(rows({ runtime: { build: 'make' } }).version).not.toHaveProperty('overrides');
    expect(rows({}).version).not.toHaveProperty('overrides');
  });
});

describe('a change of settings', () => {
  it('sets in place, appends new names, unsets, and keeps the rest', () => {
    const change = validateChange({
      env: {
        set: [
          { name: 'B', value: 'two' },
          { name: 'C', value: '3' },
        ],
        unset: ['A'],
      },
    });
    const next = applyChange(live, change);
    expect(next.env).toEqual([
      { name: 'B', value: 'two' },
      { name: 'C', value: '3' },
    ]);
    expect(next).toMatchObject({ ttl: '2h', allowedHosts: live.allowedHosts, build: live.build });
    const other = applyChange(live, validateChange({ ttl: '1h', egress: { allowed_hosts: [] } }));
    expect(other).toMatchObject({ env: live.env, ttl: '1h', allowedHosts: [] });
    expect(
      sameSettings(live, applyChange(live, validateChange({ env: { set: [live.env[0]!] } }))),
    ).toBe(true);
    expect(sameSettings(live, next)).toBe(false);
  });

  it('refuses bad changes naming the field', () => {
    expect(refusal(() => validateChange({})).field).toBe('body');
    expect(refusal(() => validateChange([])).field).toBe('body');
    expect(refusal(() => validateChange({ name: 'x' })).field).toBe('name');
    expect(refusal(() => validateChange({ access: 'open' })).field).toBe('access');
    expect(refusal(() => validateChange({ env: [] })).field).toBe('env');
    expect(refusal(() => validateChange({ env: { put: [] } })).field).toBe('env');
    expect(refusal(() => validateChange({ env: { set: [] } })).field).toBe('env');
    expect(
      refusal(() => validateChange({ env: { set: [{ name: 'SLIPWAY_X', value: '' }] } })).field,
    ).toBe('env.set[0].name');
    expect(refusal(() => validateChange({ env: { unset: ['A', 'A'] } })).field).toBe(
      'env.unset[1]',
    );
    expect(refusal(() => validateChange({ env: { unset: 'A' } })).field).toBe('env.unset');
    expect(refusal(() => validateChange({ ttl: '' })).field).toBe('ttl');
    expect(refusal(() => validateChange({ egress: { allowed_hosts: ['a b'] } })).field).toBe(
      'egress.allowed_hosts[0]',
    );
    const missing = refusal(() => applyChange(live, validateChange({ env: { unset: ['Z'] } })));
    expect(missing).toEqual({ field: 'env.unset[0]', message: 'env.unset[0] Z is not set' });
    // Within the limit alone, over it with the variables the release keeps.
    const big = { name: 'BIG', value: 'x'.repeat(64 * 1024 - 4) };
    expect(refusal(() => applyChange(live, validateChange({ env: { set: [big] } }))).field).toBe(
      'env',
    );
  });

  it('never puts a value in a refusal', () => {
    const secret = 'hunter2-value';
    const { message } = refusal(() =>
      validateChange({ env: { set: [{ name: 'PORT', value: secret }] } }),
    );
    expect(message).not.toContain(secret);
  });
});
