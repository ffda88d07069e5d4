/**
 * A node app runs inside its sandbox's agent process, so it can rewrite the answers the agent
 * gives the control plane. The control plane read them whole, for as long as they came: an app
 * that padded the inject answer made the server buffer all of it, and one that trickled it held
 * the deploy in Starting forever (the call's timeout was on an idle socket, not on the call). An
 * answer is now cut off at 1 MiB, and the call's timeout bounds it whole.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deploy } from '../support/deploy.js';
import { call, startTestServer, type TestServer } from '../support/server.js';
import { tarGz } from '../support/tarball.js';

const KEY = 'agent-answers-key-0123456789ab';

/** Rewrites the agent's JSON answers: `body(res)` writes before the agent's own text. */
function rewritingApp(body: string): Promise<Buffer> {
  return tarGz({
    'package.json': JSON.stringify({ main: 'server.js' }),
    'server.js': `
const http = require('node:http');
const { writeHead, end } = http.ServerResponse.prototype;
http.ServerResponse.prototype.writeHead = function (status, headers) {
  if (headers && typeof headers === 'object') delete headers['content-length'];
  return writeHead.call(this, status, headers);
};
http.ServerResponse.prototype.end = function (text, ...rest) {
  if (typeof text !== 'string' || !text.startsWith('{')) return end.call(this, text, ...rest);
  const res = this;
  ${body}
};
http.createServer((req, res) => res.end('app')).listen(process.env.PORT);
`,
  });
}

describe("the agent's answers are bounded, whatever the app in its process does", () => {
  let server: TestServer;

  beforeAll(async () => {
    server = await startTestServer({
      auth: { apiKeys: [{ key: KEY, name: 'owner' }] },
      runtime: { poolSize: 1, startTimeout: '4s' },
    });
  });
  afterAll(() => server.stop());

  it('fails a deploy whose inject answer is padded past 1 MiB, and the server stays well', async () => {
    // 4 MiB of spaces, then the agent's own answer: valid JSON, and far over the cap.
    const source = await rewritingApp(`
  const pad = ' '.repeat(1 << 20);
  for (let i = 0; i < 4; i++) res.write(pad);
  return end.call(res, text, ...rest);`);
    const res = await deploy(server.baseURL, KEY, { name: 'padded' }, source);
    expect(res.status, JSON.stringify(res.body)).toBe(500);
    expect(res.body).toMatchObject({ code: 'deploy_failed', details: { phase: 'Failed' } });
    expect(String(res.body.message)).toMatch(/over 1048576 bytes/);
    expect((await call(server.baseURL, '/healthz')).status).toBe(200);
  });

  it('fails a deploy whose inject answer trickles, at the start timeout', async () => {
    // One byte every 100 ms, never ending: the socket is never idle for long.
    const source = await rewritingApp(`
  res.write(' ');
  setInterval(() => res.write(' '), 100);`);
    const res = await deploy(server.baseURL, KEY, { name: 'trickled' }, source);
    expect(res.status, JSON.stringify(res.body)).toBe(500);
    expect(res.body).toMatchObject({ code: 'deploy_failed', details: { phase: 'Failed' } });
    expect(String(res.body.message)).toMatch(/did not start within 4000 ms/);
  });
});
