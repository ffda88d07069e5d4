import { describe, expect, it } from 'vitest';
import type { Identity } from '../../src/auth/identity.js';
import { parseConfig } from '../../src/config/load.js';
import type { AppRecord } from '../../src/persistence/store.js';
import { validateMetadata } from '../../src/services/deploy-metadata.js';
import { releaseRows, type ReleaseInput } from '../../src/services/deploy-rows.js';
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
  lane: 'fast',
  template: 'static',
  entrypoint: 'index.html',
  why: 'an index.html',
};
const fails: Classification = { ok: false, reason: 'NoEntrypoint', message: 'nothing to run' };

function rows(
  metadata: Record<string, unknown>,
  existing?: AppRecord,
  extra: Partial<ReleaseInput> = {},
) {
  return releaseRows({
    metadata: validateMetadata({ name: 'web', ...metadata }),
    identity: alice,
    plan: runs,
    existing,
    version: 2,
    sourceKey: `web.v2.${'0'.repeat(32)}`,
    sourceHash: 'sha256:x',
    now: '2025-01-02T00:00:00.000Z',
    defaultAccess: 'public',
    ...extra,
  }).app;
}

describe("an app's access through its deploys", () => {
  it("gives a new app the metadata's access, else the configured default", () => {
    expect(rows({}).access).toBe('public');
    expect(rows({}, undefined, { defaultAccess: 'private' }).access).toBe('private');
    expect(rows({ access: 'public' }, undefined, { defaultAccess: 'private' }).access).toBe(
      'public',
    );
    expect(rows({ access: null }, undefined, { defaultAccess: 'private' }).access).toBe('private');
  });

  it("keeps an existing app's access unless the redeploy names one, even when the release fails", () => {
    const shut = app('web', { access: 'private' });
    expect(rows({}, shut, { defaultAccess: 'public' }).access).toBe('private');
    expect(rows({ access: 'public' }, shut).access).toBe('public');
    expect(rows({ access: 'private' }, app('web'), { plan: fails }).access).toBe('private');
    // A row from before access existed was public, whatever the default says now.
    expect(rows({}, app('web'), { defaultAccess: 'private' }).access).toBe('public');
  });

  it('refuses anything but public or private, naming the field', () => {
    for (const access of ['secret', '', 1, true, ['private']]) {
      expect(() => validateMetadata({ name: 'web', access }), String(access)).toThrow(
        expect.objectContaining({
          status: 400,
          code: 'bad_metadata',
          details: { field: 'access' },
        }),
      );
    }
  });

  it('reads apps.defaultAccess from the config, public unless set', () => {
    expect(parseConfig({}).apps.defaultAccess).toBe('public');
    expect(parseConfig({ apps: { defaultAccess: 'private' } }).apps.defaultAccess).toBe('private');
    expect(() => parseConfig({ apps: { defaultAccess: 'hidden' } })).toThrow(/apps\.defaultAccess/);
  });
});
