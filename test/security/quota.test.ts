/**
 * Issue #25 item 7: with no quota configured, a non-admin created 20 apps in 26 s, each able to
 * hold a sandbox of 512 MB and a CPU. Non-admins now get default quotas, apps per owner and the
 * sandbox memory those apps may hold; admins have none.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/load.js';
import { deploy } from '../support/deploy.js';
import { call, startTestServer, type TestServer } from '../support/server.js';
import { tarGz } from '../support/tarball.js';

const USER = 'quota-user-key-0123456789';
const ADMIN = 'quota-admin-key-0123456789';
const defaults = parseConfig({}).limits;
/** The answer to a deploy whose app was created but cannot run. */
const CREATED = 'deploy_failed';

/** Deploys `count` apps named `<prefix>-<i>` one after another; returns each answer. */
async function flood(base: string, token: string, prefix: string, count: number) {
  // Nothing here runs (no template matches a lone text file): each deploy makes a Failed app, a
  // row that counts against the quota like any other, without the cost of a sandbox.
  const source = await tarGz({ 'notes.txt': 'not an app' });
  const answers: { status: number; code?: unknown; message?: unknown }[] = [];
  for (let i = 0; i < count; i += 1) {
    const res = await deploy(base, token, { name: `${prefix}-${i}` }, source);
    answers.push({ status: res.status, code: res.body.code, message: res.body.message });
  }
  return answers;
}

describe.each([
  { memoryLimitMB: 512, allowed: 8 },
  { memoryLimitMB: 128, allowed: 10 },
])('default quotas with runtime.memoryLimitMB $memoryLimitMB', ({ memoryLimitMB, allowed }) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({
      auth: {
        apiKeys: [
          { key: USER, name: 'tenant' },
          { key: ADMIN, name: 'operator', role: 'admin' },
        ],
      },
      runtime: { memoryLimitMB, poolSize: 0 },
    });
  });
  afterAll(() => server.stop());

  it('ships non-admin defaults that bind', () => {
    expect(defaults.maxAppsPerOwner).toBe(10);
    expect(defaults.maxSandboxMemoryMBPerOwner).toBe(4096);
    expect(Math.min(10, Math.floor(4096 / memoryLimitMB))).toBe(allowed);
  });

  it(`stops a non-admin at ${allowed} apps with quota_exceeded`, async () => {
    const answers = await flood(server.baseURL, USER, 'tenant', allowed + 2);
    expect(answers.slice(0, allowed).map((a) => a.code)).toEqual(Array(allowed).fill(CREATED));
    expect(answers.slice(allowed)).toEqual(
      Array(2).fill(expect.objectContaining({ status: 429, code: 'quota_exceeded' })),
    );
    const memory = memoryLimitMB * allowed + memoryLimitMB > 4096;
    expect(String(answers[allowed]?.message)).toMatch(
      memory ? /4096 MB of sandbox memory/ : /10 apps/,
    );
  });

  it('leaves admins unlimited', async () => {
    const answers = await flood(server.baseURL, ADMIN, 'operator', allowed + 2);
    expect(answers.map((a) => a.code)).toEqual(Array(allowed + 2).fill(CREATED));
    const list = await call(server.baseURL, '/v1/apps', { token: ADMIN });
    const names = (list.body as { items: { name: string }[] }).items.map((a) => a.name);
    expect(names.filter((n) => n.startsWith('operator-')).length).toBe(allowed + 2);
  });
});
