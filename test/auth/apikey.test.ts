import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config/load.js';
import { startSlipway } from '../../src/start.js';
import { call, json, rawGet, removeDir, start, tempDataDir, type Started } from './helpers.js';

const ADMIN_KEY = 'admin-key-0123456789abcdef';
const DEPLOY_KEY = 'deploy-key-0123456789abcdef';
const ENV_KEY = 'env-key-from-the-environment';
const FILE_KEY = 'file-key-from-a-secret-file';

describe('apikey mode', () => {
  let s: Started;

  beforeAll(async () => {
    const dataDir = tempDataDir();
    const keyFile = join(dataDir, 'key.txt');
    writeFileSync(keyFile, `\n  ${FILE_KEY}  \n`);
    process.env.SLIPWAY_TEST_KEY = ENV_KEY;
    s = await start(
      {
        identityCacheTTL: '0s',
        apiKeys: [
          { key: ADMIN_KEY, name: 'ops', role: 'admin' },
          { key: DEPLOY_KEY, name: 'ci-bot', scopes: ['deploy'], department: 'platform' },
          { key: 'env:SLIPWAY_TEST_KEY', name: 'from-env' },
          { key: `file:${keyFile}`, name: 'from-file' },
        ],
      },
      dataDir,
    );
  });
  afterAll(async () => {
    await s.close();
    delete process.env.SLIPWAY_TEST_KEY;
    removeDir(s.dataDir);
  });

  it('accepts a configured key and auto-provisions apikey-<name>', async () => {
    expect(s.app.store.getUser('apikey-ci-bot')).toBeUndefined();
    const res = await call(s.baseURL, '/api/whoami', { token: DEPLOY_KEY });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      user_id: 'apikey-ci-bot',
      name: 'ci-bot',
      role: 'user',
      department: 'platform',
      scopes: ['deploy'],
      mode: 'apikey',
    });
    const record = s.app.store.getUser('apikey-ci-bot');
    expect(record).toMatchObject({
      id: 'apikey-ci-bot',
      role: 'user',
      status: 'active',
      department: 'platform',
    });
    expect(record?.apiKeyHash).toBeUndefined();
  });

  it('seeds the role from the entry', async () => {
    const res = await call(s.baseURL, '/api/whoami', { token: ADMIN_KEY });
    expect(res.status).toBe(200);
    expect(json(res.body)).toMatchObject({ user_id: 'apikey-ops', role: 'admin', scopes: [] });
  });

  it('reads env: and file: keys (file trimmed)', async () => {
    const fromEnv = await call(s.baseURL, '/api/whoami', { token: ENV_KEY });
    expect(json(fromEnv.body).user_id).toBe('apikey-from-env');
    const fromFile = await call(s.baseURL, '/api/whoami', { token: FILE_KEY });
    expect(fromFile.status).toBe(200);
    expect(json(fromFile.body).user_id).toBe('apikey-from-file');
    // The reference itself is not a key.
    const literalRef = await call(s.baseURL, '/api/whoami', { token: 'env:SLIPWAY_TEST_KEY' });
    expect(literalRef.status).toBe(401);
  });

  const refused: Array<[string, Record<string, string>]> = [
    ['a wrong key', { authorization: 'Bearer not-a-key' }],
    ['a key one byte different', { authorization: `Bearer ${ADMIN_KEY.slice(0, -1)}g` }],
    ['a key with a byte missing', { authorization: `Bearer ${ADMIN_KEY.slice(0, -1)}` }],
    ['no Authorization header', {}],
    [
      'another scheme',
      { authorization: `Basic ${Buffer.from(`x:${ADMIN_KEY}`).toString('base64')}` },
    ],
    ['an empty bearer token', { authorization: 'Bearer ' }],
    ['the bare scheme', { authorization: 'Bearer' }],
    ['junk after the token', { authorization: `Bearer ${ADMIN_KEY} junk` }],
    ['a junk token', { authorization: 'Bearer %%%{}~~..==' }],
    ['an oversized header', { authorization: `Bearer ${'a'.repeat(9000)}` }],
  ];
  it.each(refused)('refuses %s with 401 and the error body', async (_what, headers) => {
    const res = await call(s.baseURL, '/api/whoami', { headers });
    expect(res.status).toBe(401);
    expect(json(res.body).code).toBe('unauthenticated');
    expect(typeof json(res.body).message).toBe('string');
    expect(res.headers.get('www-authenticate')).toBe('Bearer');
    expect(JSON.stringify(res.body)).not.toContain(ADMIN_KEY);
  });

  it('refuses a token with non-ASCII bytes with 401, not 5xx', async () => {
    const res = await rawGet(s.baseURL, '/api/whoami', { authorization: 'Bearer \u00ff\u00fekey' });
    expect(res.status).toBe(401);
    expect(JSON.parse(res.body)).toMatchObject({ code: 'unauthenticated' });
  });

  it('needs the key on /v1 and /mcp too', async () => {
    expect((await call(s.baseURL, '/v1/apps')).status).toBe(401);
    expect((await call(s.baseURL, '/mcp', { method: 'POST', body: {} })).status).toBe(401);
  });
});

describe('apikey configuration', () => {
  it('a missing env: variable stops the start, naming the entry', async () => {
    const dataDir = tempDataDir();
    const config = loadConfig({
      SVC_LISTEN: '127.0.0.1:0',
      SVC_RESTART_CONTINUITY: 'false',
      SVC_DATA_DIR: dataDir,
      SVC_CONFIG: writeConfig(dataDir, 'env:SLIPWAY_NOT_SET_ANYWHERE'),
    });
    await expect(startSlipway(config, { logger: false })).rejects.toThrow(
      /auth\.apiKeys\[0\] \(broken\).*SLIPWAY_NOT_SET_ANYWHERE/,
    );
    removeDir(dataDir);
  });

  it('a missing file: stops the start with a ConfigError', async () => {
    const dataDir = tempDataDir();
    const config = loadConfig({
      SVC_LISTEN: '127.0.0.1:0',
      SVC_RESTART_CONTINUITY: 'false',
      SVC_DATA_DIR: dataDir,
      SVC_CONFIG: writeConfig(dataDir, `file:${join(dataDir, 'nope.txt')}`),
    });
    const failure = startSlipway(config, { logger: false });
    await expect(failure).rejects.toBeInstanceOf(ConfigError);
    await expect(failure).rejects.toThrow(/broken.*nope\.txt/);
    removeDir(dataDir);
  });

  it('SVC_AUTH_API_KEY alone enables auth with one admin key', async () => {
    const dataDir = tempDataDir();
    const config = loadConfig({
      SVC_LISTEN: '127.0.0.1:0',
      SVC_RESTART_CONTINUITY: 'false',
      SVC_DATA_DIR: dataDir,
      SVC_AUTH_API_KEY: 'single-operator-key',
    });
    const running = await startSlipway(config, { logger: false });
    try {
      expect((await call(running.baseURL, '/api/whoami')).status).toBe(401);
      const res = await call(running.baseURL, '/api/whoami', { token: 'single-operator-key' });
      expect(res.status).toBe(200);
      expect(json(res.body)).toMatchObject({
        user_id: 'apikey-default',
        role: 'admin',
        mode: 'apikey',
      });
      const users = await call(running.baseURL, '/api/users', { token: 'single-operator-key' });
      expect(users.status).toBe(200);
    } finally {
      await running.close();
      removeDir(dataDir);
    }
  });
});

function writeConfig(dir: string, key: string): string {
  const path = join(dir, 'slipway.yaml');
  writeFileSync(path, `auth:\n  apiKeys:\n    - name: broken\n      key: "${key}"\n`);
  return path;
}
