import { randomBytes } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runtimeRoot } from '../../src/runtime/local/runtime-dir.js';
import { processRef, runs } from '../../src/runtime/local/teardown.js';
import { eventually, processTreeOf, sandboxCgroupsOf } from '../runtime/support.js';
import { deploy, fetchApp } from '../support/deploy.js';
import { call, startTestServer, type TestServer } from '../support/server.js';
import { tarGz } from '../support/tarball.js';

const KEY = 'teardown-key-0123456789abcdef';

/** Whatever an app does to its sandbox, deleting it leaves no process, cgroup or dir behind. */
describe('teardown of a hostile app', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({
      auth: { apiKeys: [{ key: KEY, name: 'owner' }] },
      runtime: { poolSize: 1, pidsLimit: 64 },
    });
  });
  afterAll(() => server?.stop());

  it('removes a fork bomb: every process, its cgroups and its sandbox dir', async () => {
    const marker = `bomb-${randomBytes(6).toString('hex')}`;
    const source = await tarGz({
      'package.json': '{"main":"server.js"}',
      'server.js': `process.title = ${JSON.stringify(marker)};
const { spawn } = require('node:child_process');
require('node:http').createServer((req, res) => {
  if (req.url === '/bomb') spawn('sh', ['-c', 'while :; do sleep 1000 & done'], { detached: true, stdio: 'ignore' });
  res.end('armed');
}).listen(process.env.PORT);`,
    });
    const res = await deploy(server.baseURL, KEY, { name: 'bomb' }, source);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const hostPid = Number(
      readdirSync('/proc').find((pid) => {
        try {
          return readFileSync(`/proc/${pid}/cmdline`, 'latin1').startsWith(marker);
        } catch {
          return false;
        }
      }),
    );
    expect(hostPid).toBeGreaterThan(0);
    const cgroups = sandboxCgroupsOf(hostPid);
    expect(cgroups.length).toBeGreaterThan(0);
    const id = basename(cgroups[0] as string).replace(/^sb-/, '');
    const dir = join(runtimeRoot(server.dataDir, undefined), 'sandboxes', id);
    expect(existsSync(dir)).toBe(true);

    expect((await fetchApp(`${String(res.body.url)}/bomb`)).body).toBe('armed');
    // The bomb fills its pid limit and keeps forking: the cgroup holds dozens of processes.
    const pidsFile = cgroups.find((c) => c.includes('/pids/')) ?? cgroups[0];
    let most = 0;
    await eventually(() => {
      most = Math.max(
        most,
        readFileSync(join(String(pidsFile), 'cgroup.procs'), 'utf8').split('\n').length,
      );
      return most > 30;
    }, 'the fork bomb to fill its cgroup').catch((err: Error) => {
      throw new Error(`${err.message}: at most ${most} in ${String(pidsFile)}`);
    });
    const bombPids = readFileSync(join(String(pidsFile), 'cgroup.procs'), 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((pid) => processRef(Number(pid)));

    const del = await call(server.baseURL, '/v1/apps/bomb', { method: 'DELETE', token: KEY });
    expect([200, 202, 204]).toContain(del.status);
    await eventually(
      () => cgroups.every((c) => !existsSync(c)) && !existsSync(dir),
      'the cgroups and the sandbox dir to go',
      20_000,
    );
    expect(bombPids.filter(runs)).toEqual([]);
    expect(processTreeOf(hostPid)).toEqual([]);
    expect((await call(server.baseURL, '/healthz')).status).toBe(200);
  });
});
