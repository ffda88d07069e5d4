import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deploy, fetchApp, waitForPhase } from '../support/deploy.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { tarGz } from '../support/tarball.js';

const KEY = 'leftover-key-0123456789abcdef';

/**
 * An install script that starts a daemon in a session of its own escapes the step's process
 * group; it must still be gone before the app's first line runs.
 */
describe('the general lane install step', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({
      auth: { apiKeys: [{ key: KEY, name: 'owner' }] },
      runtime: { poolSize: 1 },
    });
  });
  afterAll(() => server?.stop());

  it('leaves nothing it started running into the app', async () => {
    const source = await tarGz({
      'package.json': JSON.stringify({
        name: 'leftovers',
        version: '1.0.0',
        main: 'server.js',
        scripts: {
          // The step waits until the daemon runs: on a loaded host the step could end first.
          preinstall:
            "setsid sh -c 'echo daemon-up > /tmp/daemon; while :; do sleep 1; done' >/dev/null 2>&1 < /dev/null & while [ ! -s /tmp/daemon ]; do sleep 0.05; done",
        },
      }),
      'server.js': `const fs = require('node:fs');
require('node:http').createServer((req, res) => {
  const others = fs.readdirSync('/proc').filter((n) => /^\\d+$/.test(n) && n !== '1' && n !== String(process.pid))
    .map((pid) => { try { return pid + ' ' + fs.readFileSync('/proc/' + pid + '/cmdline', 'latin1').replace(/\\0/g, ' '); } catch (e) { return pid + ' gone'; } });
  let started = 'no';
  try { started = fs.readFileSync('/tmp/daemon', 'utf8').trim(); } catch {}
  res.end(JSON.stringify({ others, started }));
}).listen(process.env.PORT);`,
    });
    const res = await deploy(
      server.baseURL,
      KEY,
      { name: 'leftovers', runtime: { lane: 'general', template: 'node' } },
      source,
    );
    expect([200, 202]).toContain(res.status);
    const app = await waitForPhase(server.baseURL, KEY, 'leftovers', ['Ready', 'Failed'], 60_000);
    expect(app.phase, JSON.stringify(app)).toBe('Ready');
    const page = await fetchApp(String(app.url));
    const seen = JSON.parse(page.body) as { others: string[]; started: string };
    // The daemon did start (so the check below means something), and is gone.
    expect(seen.started).toBe('daemon-up');
    expect(seen.others).toEqual([]);
  });
});
