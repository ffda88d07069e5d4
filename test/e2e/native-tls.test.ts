/**
 * The native front door under TLS: HAProxy ends TLS for the Ready public apps it routes straight
 * to their sockets, and speaks TLS again to the control plane for everything else. Before, TLS
 * on made the data path the Node router (or, with only autoTLS set, a plain-HTTP proxy in front
 * of a TLS-only server: nothing worked). Real server, real sandbox, real HAProxy, real HTTPS.
 */
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { haproxyCommand } from '../../src/front/haproxy/haproxy-cli.js';
import { deployForm, httpsTo, type HttpsInit } from '../support/https-client.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { tarGz } from '../support/tarball.js';

const KEY = 'native-tls-admin-key-0123456789abcdef';

describe('the native front door under TLS', () => {
  let server: TestServer;
  let ca: string;
  const https = (url: string, init: HttpsInit = {}) => httpsTo(ca, url, init);
  const auth = { authorization: `Bearer ${KEY}` };

  beforeAll(async () => {
    server = await startTestServer({
      server: { dataPath: 'native' },
      auth: { apiKeys: [{ key: KEY, name: 'admin', role: 'admin' }], tls: { autoTLS: true } },
      runtime: { poolSize: 1 },
    });
    ca = readFileSync(join(server.dataDir, 'tls', 'auto-cert.pem'), 'utf8');
  });

  afterAll(async () => {
    await server?.stop();
  });

  /** Requests HAProxy sent straight to app sockets (the slot backends), all slots together. */
  async function directRequests(): Promise<number> {
    const stats = await haproxyCommand(join(server.dataDir, 'front', 'admin.sock'), 'show stat');
    return stats
      .split('\n')
      .map((line) => line.split(','))
      .filter((fields) => /^slot_\d+$/.test(fields[0] ?? '') && fields[1] === 'BACKEND')
      .reduce((sum, fields) => sum + Number(fields[7]), 0);
  }

  it('serves the API over HTTPS through the proxy, and says the data path is native', async () => {
    expect(server.baseURL.startsWith('https://')).toBe(true);
    const ready = await https(`${server.baseURL}/readyz`, { headers: auth });
    expect(ready.status, ready.body).toBe(200);
    const body = JSON.parse(ready.body) as { components: Record<string, Record<string, unknown>> };
    expect(body.components.dataPath).toEqual({ ok: true, kind: 'native', proxy: 'haproxy' });
    // The key is in the proxy's certificate file: the owner's alone.
    expect(statSync(join(server.dataDir, 'front', 'tls.pem')).mode & 0o777).toBe(0o600);
  });

  it('ends TLS for a Ready public app and sends its requests straight to the app', async () => {
    const source = await tarGz({
      'package.json': JSON.stringify({ name: 'proto', main: 'server.js' }),
      'server.js': `require('node:http').createServer((req, res) => {
  res.end('proto=' + req.headers['x-forwarded-proto'] + ' via=' + (req.headers['x-forwarded-for'] ?? '') + '\\n');
}).listen(process.env.PORT);`,
    });
    const form = deployForm({ name: 'tls-direct' }, source);
    const deployed = await https(`${server.baseURL}/v1/deploy`, {
      method: 'POST',
      headers: { ...auth, 'content-type': form.type },
      body: form.body,
    });
    expect(deployed.status, deployed.body).toBe(200);
    const app = JSON.parse(deployed.body) as { url: string };
    expect(app.url.startsWith('https://tls-direct.localhost:')).toBe(true);

    const before = await directRequests();
    const answer = await https(app.url);
    expect(answer.status, answer.body).toBe(200);
    expect(answer.body).toBe('proto=https via=127.0.0.1\n');
    expect(await directRequests()).toBe(before + 1);
  });
});
