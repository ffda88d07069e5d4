/**
 * Issue #25 item 3: the data dir was 0755 and `slipway.db` / `-wal` 0644, so any account on the
 * host could read every app's env values in plaintext, share-link tokens and key hashes. The data
 * dir is now 0700 and its files 0600, checked and repaired at start, and env values are sealed
 * (AES-256-GCM) under a key of their own, so a copied database or backup does not show them.
 */
import Database from 'better-sqlite3';
import {
  chmodSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { openStore } from '../../src/persistence/open-store.js';
import { deploy, fetchApp, waitForPhase } from '../support/deploy.js';
import { freePort, startServerProcess } from '../support/server-process.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { tarGz } from '../support/tarball.js';

const KEY = 'alice-at-rest-key-0123456789abcd';
const SECRET = 'DB-PASSWORD-hunter2-0f9e8d7c';
const OLD_SECRET = 'OLD-PLAINTEXT-s3cr3t-1a2b3c4d';

/** Answers with the env value it was started with: the sealed value must reach the app intact. */
const ENV_APP = {
  'package.json': '{"main":"server.js"}',
  'server.js':
    "require('node:http').createServer((q, s) => s.end(String(process.env.DB_PASSWORD))).listen(process.env.PORT);",
};

const modeOf = (path: string): string => (statSync(path).mode & 0o777).toString(8);

/** Every byte SQLite keeps for the database: the main file and its WAL. */
function rawBytes(dataDir: string): string {
  return readdirSync(dataDir)
    .filter((name) => name.startsWith('slipway.db'))
    .map((name) => readFileSync(join(dataDir, name)).toString('latin1'))
    .join('');
}

describe('secrets at rest', { timeout: 180_000 }, () => {
  const root = mkdtempSync(join(tmpdir(), 'slipway-at-rest-'));
  const dataDir = join(root, 'data');
  const servers: TestServer[] = [];
  const start = async (): Promise<TestServer> => {
    const server = await startTestServer(
      { auth: { apiKeys: [{ key: KEY, name: 'alice' }] }, runtime: { poolSize: 1 } },
      dataDir,
    );
    servers.push(server);
    return server;
  };
  const stop = async (server: TestServer): Promise<void> => {
    servers.splice(servers.indexOf(server), 1);
    await server.stop();
  };
  afterAll(async () => {
    for (const server of servers) await server.stop();
    rmSync(root, { recursive: true, force: true });
  });

  it('keeps the data dir and the database to this user, and env values sealed', async () => {
    const server = await start();
    const res = await deploy(
      server.baseURL,
      KEY,
      { name: 'sealed', env: [{ name: 'DB_PASSWORD', value: SECRET }] },
      await tarGz(ENV_APP),
    );
    expect([200, 202], JSON.stringify(res.body)).toContain(res.status);
    const app = await waitForPhase(server.baseURL, KEY, 'sealed', ['Ready'], 60_000);
    expect((await fetchApp(String(app.url))).body).toBe(SECRET);

    expect(modeOf(dataDir)).toBe('700');
    for (const name of ['slipway.db', 'slipway.db-wal', 'slipway.db-shm', 'env.key']) {
      expect([name, modeOf(join(dataDir, name))]).toEqual([name, '600']);
    }
    expect(rawBytes(dataDir)).not.toContain(SECRET);
    expect(rawBytes(dataDir)).not.toContain('DB_PASSWORD');
    await stop(server);
  });

  it('repairs loose permissions and seals plaintext env rows at start, keeping them usable', async () => {
    // As a database written before this fix left things: plaintext env, world-readable files.
    const db = new Database(join(dataDir, 'slipway.db'));
    const plaintext = JSON.stringify([{ name: 'DB_PASSWORD', value: OLD_SECRET }]);
    db.prepare('UPDATE apps SET env = ?').run(plaintext);
    db.prepare('UPDATE versions SET env = ?').run(plaintext);
    db.close();
    chmodSync(dataDir, 0o755);
    for (const name of readdirSync(dataDir).filter((n) => n.startsWith('slipway.db'))) {
      chmodSync(join(dataDir, name), 0o644);
    }
    expect(rawBytes(dataDir)).toContain(OLD_SECRET);

    const server = await start();
    expect(modeOf(dataDir)).toBe('700');
    expect(modeOf(join(dataDir, 'slipway.db'))).toBe('600');
    expect(rawBytes(dataDir)).not.toContain(OLD_SECRET);
    const app = await waitForPhase(server.baseURL, KEY, 'sealed', ['Ready'], 60_000);
    expect((await fetchApp(String(app.url))).body).toBe(OLD_SECRET);
    await stop(server);
  });

  it('refuses to start without the key, or with another one, saying which', async () => {
    const keyFile = join(dataDir, 'env.key');
    const kept = readFileSync(keyFile);
    try {
      writeFileSync(keyFile, `${randomBytes(32).toString('base64')}\n`, { mode: 0o600 });
      await expect(start()).rejects.toThrow(/do not open with the key from .*env\.key/);
      rmSync(keyFile);
      await expect(start()).rejects.toThrow(/key is missing: restore .*env\.key/);
      // Nothing was made up in its place: a new key would never open them.
      expect(readdirSync(dataDir)).not.toContain('env.key');
    } finally {
      writeFileSync(keyFile, kept, { mode: 0o600 });
    }
    const server = await start();
    const app = await waitForPhase(server.baseURL, KEY, 'sealed', ['Ready'], 60_000);
    expect((await fetchApp(String(app.url))).body).toBe(OLD_SECRET);
    await stop(server);
  });

  it('logs each repair', async () => {
    const dir = join(root, 'logged');
    const first = await openStore({ backend: 'sqlite', dataDir: dir });
    first.close();
    chmodSync(dir, 0o755);
    chmodSync(join(dir, 'slipway.db'), 0o644);
    chmodSync(join(dir, 'env.key'), 0o640);
    const lines: Array<{ msg: string; extra?: object }> = [];
    const store = await openStore({
      backend: 'sqlite',
      dataDir: dir,
      log: (_level, msg, extra) => lines.push({ msg, ...(extra ? { extra } : {}) }),
    });
    store.close();
    const repaired = lines.filter((line) => line.msg.startsWith('repaired permissions'));
    expect(repaired.map((line) => line.extra)).toEqual([
      { path: dir, was: '0755', now: '0700' },
      { path: join(dir, 'slipway.db'), was: '0644', now: '0600' },
      { path: join(dir, 'env.key'), was: '0640', now: '0600' },
    ]);
  });

  it('makes a new data dir 0700 from the start: nothing to repair on a first start', async () => {
    const dir = join(root, 'first-start', 'data');
    mkdirSync(join(root, 'first-start'));
    const server = await startServerProcess({
      dataDir: dir,
      port: await freePort(),
      env: { SVC_AUTH_API_KEY: KEY },
    });
    try {
      expect(modeOf(dir)).toBe('700');
      expect(server.output().filter((line) => line.includes('repaired permissions'))).toEqual([]);
    } finally {
      await server.stop('SIGTERM');
    }
  });
});
