/**
 * Issue 28 items 1 and 2 over real HTTP, real sandboxes and a real SQLite file, in a server
 * process whose log output is read too: config carries over across deploys, and PATCH
 * /v1/apps/{id} makes a config release of the live source. Env values never show in any view,
 * event, audit row or log line.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { VersionView } from '../../src/services/history-service.js';
import { deploy, fetchApp } from '../support/deploy.js';
import { call } from '../support/server.js';
import { freePort, startServerProcess, type ServerProcess } from '../support/server-process.js';
import { SseClient } from '../support/sse.js';
import { tarGz } from '../support/tarball.js';

const ALICE = 'alice-config-key-0123456789abcd';
const BOB = 'bob-config-key-0123456789abcdef';
const ADMIN = 'ops-config-key-0123456789abcdef';
const FIRST = 'first-value-5f1c0e9a7b';
const SECOND = 'second-value-8d2a4c6e1f';
const OTHER = 'other-value-3b7e9d1a5c';
const SECRETS = [FIRST, SECOND, OTHER];

/** Answers `<label> <GREETING>`: which source serves, with which value. */
const envApp = (label: string) =>
  tarGz({
    'package.json': JSON.stringify({ name: 'env-app', main: 'server.js' }),
    'server.js': `require('node:http').createServer((q, s) => s.end('${label} ' + process.env.GREETING)).listen(process.env.PORT);`,
  });

describe('config carries over; config releases', { timeout: 240_000 }, () => {
  const root = mkdtempSync(join(tmpdir(), 'slipway-config-'));
  let server: ServerProcess;
  let events: SseClient;
  const seen: string[] = [];

  const json = async (path: string, token = ALICE) => {
    const res = await call(server.baseURL, path, { token });
    seen.push(res.text);
    return res.body as Record<string, unknown>;
  };
  const versions = async (app: string) =>
    (await json(`/v1/apps/${app}/versions`)).items as VersionView[];
  const patch = async (app: string, body: unknown, token = ALICE) => {
    const res = await call(server.baseURL, `/v1/apps/${app}`, {
      method: 'PATCH',
      token,
      json: body,
    });
    seen.push(res.text);
    return res;
  };
  const serves = async (app: string) =>
    (await fetchApp(`http://${app}.localhost:${server.port}/`)).body;

  beforeAll(async () => {
    server = await startServerProcess({
      dataDir: join(root, 'data'),
      port: await freePort(),
      config: {
        server: { logLevel: 'debug' },
        auth: {
          apiKeys: [
            { key: ALICE, name: 'alice' },
            { key: BOB, name: 'bob' },
            { key: ADMIN, name: 'ops', role: 'admin' },
          ],
        },
        runtime: { poolSize: 1 },
      },
    });
    events = await SseClient.open(`${server.baseURL}/api/events`, ADMIN);
  });
  afterAll(async () => {
    events?.close();
    await server?.stop();
    rmSync(root, { recursive: true, force: true });
  });

  it('keeps env, egress and ttl across a redeploy that names none; env: [] clears the env', async () => {
    const first = await deploy(
      server.baseURL,
      ALICE,
      {
        name: 'carry',
        env: [{ name: 'GREETING', value: FIRST }],
        egress: { allowed_hosts: ['api.example.com'] },
        ttl: '2h',
      },
      await envApp('one'),
    );
    expect(first.status).toBe(200);
    expect(await serves('carry')).toBe(`one ${FIRST}`);

    expect(
      (await deploy(server.baseURL, ALICE, { name: 'carry' }, await envApp('two'))).status,
    ).toBe(200);
    expect(await serves('carry')).toBe(`two ${FIRST}`);
    expect((await versions('carry'))[0]).toMatchObject({
      version: 2,
      env: [{ name: 'GREETING' }],
      egress: { allowed_hosts: ['api.example.com'] },
      ttl: '2h',
      live: true,
    });

    const cleared = await deploy(
      server.baseURL,
      ALICE,
      { name: 'carry', env: [] },
      await envApp('three'),
    );
    expect(cleared.status).toBe(200);
    expect(await serves('carry')).toBe('three undefined');
    const [third] = await versions('carry');
    expect(third).toMatchObject({ version: 3, env: [], ttl: '2h' });
    expect(third?.egress.allowed_hosts).toEqual(['api.example.com']);
    expect((await json('/v1/apps/carry')).env).toEqual([]);
  });

  it('asks again for the runtime the live release asked for; runtime: {} lets the classifier decide', async () => {
    // Both a node server and a static page: the classifier picks node unless told otherwise.
    const both = (label: string) =>
      tarGz({
        'package.json': JSON.stringify({ name: 'both', main: 'server.js' }),
        'server.js': `require('node:http').createServer((q, s) => s.end('node ${label}')).listen(process.env.PORT);`,
        'index.html': `<p>static ${label}</p>`,
      });
    const asStatic = await deploy(
      server.baseURL,
      ALICE,
      { name: 'asked', runtime: { template: 'static' } },
      await both('one'),
    );
    expect(asStatic.status).toBe(200);
    expect(await serves('asked')).toBe('<p>static one</p>');
    expect((await deploy(server.baseURL, ALICE, { name: 'asked' }, await both('two'))).status).toBe(
      200,
    );
    expect(await serves('asked')).toBe('<p>static two</p>');
    expect((await versions('asked'))[0]).toMatchObject({ version: 2, template: 'static' });
    const reclassified = await deploy(
      server.baseURL,
      ALICE,
      { name: 'asked', runtime: {} },
      await both('three'),
    );
    expect(reclassified.status).toBe(200);
    expect(await serves('asked')).toBe('node three');
  });

  it('PATCH env makes a new version of the live source serving the new value; rollback restores the old one', async () => {
    const made = await deploy(
      server.baseURL,
      ALICE,
      {
        name: 'conf',
        env: [
          { name: 'GREETING', value: FIRST },
          { name: 'OTHER', value: OTHER },
        ],
      },
      await envApp('src'),
    );
    expect(made.status).toBe(200);
    expect(await serves('conf')).toBe(`src ${FIRST}`);

    const changed = await patch('conf', {
      env: { set: [{ name: 'GREETING', value: SECOND }], unset: ['OTHER'] },
    });
    expect(changed.status).toBe(200);
    expect(changed.body).toMatchObject({
      app_id: 'conf',
      phase: 'Ready',
      live_version: 2,
      last_deploy: { version: 2, outcome: 'Ready' },
      env: [{ name: 'GREETING' }],
    });
    expect(await serves('conf')).toBe(`src ${SECOND}`);
    const [v2, v1] = await versions('conf');
    expect(v2).toMatchObject({ version: 2, env: [{ name: 'GREETING' }], live: true });
    expect(v2?.rolled_back_from).toBeUndefined();
    // The same source: a config release never needs it sent again.
    expect(v2?.source_hash).toBe(v1?.source_hash);

    const back = await call(server.baseURL, '/v1/apps/conf/rollback', {
      method: 'POST',
      token: ALICE,
      json: { version: 1 },
    });
    seen.push(back.text);
    expect(back.status).toBe(200);
    expect(await serves('conf')).toBe(`src ${FIRST}`);
    expect((await versions('conf'))[0]).toMatchObject({
      version: 3,
      rolled_back_from: 1,
      env: [{ name: 'GREETING' }, { name: 'OTHER' }],
    });

    // ttl and egress make a release too; the env it does not name is kept.
    const settings = await patch('conf', {
      ttl: '1h',
      egress: { allowed_hosts: ['*.example.org'] },
    });
    expect(settings.status).toBe(200);
    expect((await versions('conf'))[0]).toMatchObject({
      version: 4,
      ttl: '1h',
      egress: { allowed_hosts: ['*.example.org'] },
      env: [{ name: 'GREETING' }, { name: 'OTHER' }],
    });
    expect(await serves('conf')).toBe(`src ${FIRST}`);

    // Settings that are already these make no release; access alone makes none either.
    const same = await patch('conf', { env: { set: [{ name: 'GREETING', value: FIRST }] } });
    expect(same.status).toBe(200);
    const privately = await patch('conf', { access: 'private' });
    expect(privately.body).toMatchObject({ access: 'private', live_version: 4 });
    expect((await versions('conf'))[0]?.version).toBe(4);

    const audit = (await json('/v1/audit?app=conf', ADMIN)).events as Record<string, unknown>[];
    expect(audit.map((e) => `${e.action} ${e.outcome}`)).toEqual([
      'update ok',
      'deploy noop',
      'deploy ok',
      'deploy ok',
      'deploy ok',
      'deploy ok',
    ]);
    expect(audit[2]?.source_hash).toBe(v1?.source_hash);
  });

  it('refuses bad changes with the error body, before anything is done', async () => {
    const refused: [unknown, string][] = [
      [{}, 'body'],
      [{ colour: 'red' }, 'colour'],
      [{ env: { set: [{ name: 'PORT', value: SECOND }] } }, 'env.set[0].name'],
      [{ env: { set: [{ name: '1X', value: SECOND }] } }, 'env.set[0].name'],
      [{ env: { unset: ['NOT_SET'] } }, 'env.unset[0]'],
      [{ env: { set: [{ name: 'A', value: SECOND }], unset: ['A'] } }, 'env.unset[0]'],
      [{ env: {} }, 'env'],
      [{ ttl: 'soon' }, 'ttl'],
      [{ egress: { allowed_hosts: ['not a host'] } }, 'egress.allowed_hosts[0]'],
      // Access is not changed when the rest of the body is refused.
      [{ access: 'public', ttl: '0s' }, 'ttl'],
    ];
    for (const [body, field] of refused) {
      const res = await patch('conf', body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      const error = res.body as { code: string; message: string; details?: { field?: string } };
      expect(error.code).toBe('bad_request');
      expect(typeof error.message).toBe('string');
      // Shape errors come from the schema, rule errors from the service, which names the field.
      if (error.details?.field !== undefined) expect(error.details.field).toBe(field);
    }
    const other = await patch('conf', { env: { set: [{ name: 'GREETING', value: SECOND }] } }, BOB);
    expect(other.status).toBe(404);
    expect(await json('/v1/apps/conf')).toMatchObject({ access: 'private', live_version: 4 });
    expect((await versions('conf'))[0]?.version).toBe(4);
  });

  it('shows no env value in any view, event, audit row or log line', async () => {
    await json('/v1/apps');
    await json('/v1/apps/carry');
    await json('/v1/apps/conf/versions');
    await json('/v1/audit', ADMIN);
    await events.waitFor(
      (f) => f.event === 'app' && (f.data ?? '').includes('"conf"'),
      'an event of conf',
    );
    const everything = [
      ...seen,
      ...events.frames.map((f) => f.data ?? ''),
      ...server.output(),
    ].join('\n');
    expect(events.frames.filter((f) => f.event === 'app').length).toBeGreaterThan(5);
    expect(server.output().some((line) => line.includes('PATCH'))).toBe(true);
    for (const secret of SECRETS) expect(everything).not.toContain(secret);
  });
});
