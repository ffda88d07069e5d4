import { spawnSync } from 'node:child_process';
import { request } from 'node:https';
import { X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/config/load.js';
import { call, startTestServer, type TestServer } from '../support/server.js';

describe('probes, metrics and error bodies', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ auth: { enabled: false } });
  });
  afterAll(() => server.stop());

  it('answers /healthz and /readyz once store and listener are up', async () => {
    expect((await call(server.baseURL, '/healthz')).status).toBe(200);
    const ready = await call(server.baseURL, '/readyz');
    expect(ready.status).toBe(200);
    expect(ready.body).toMatchObject({
      status: 'ready',
      components: { store: { ok: true, backend: 'sqlite' }, http: { ok: true } },
    });
  });

  it('renders unknown routes as the spec error body', async () => {
    const res = await call(server.baseURL, '/no/such/route');
    expect(res.status).toBe(404);
    expect(res.body).toMatchObject({ code: 'not_found', message: expect.any(String) });
  });

  it('counts and times requests by route and status', async () => {
    await call(server.baseURL, '/healthz');
    await call(server.baseURL, '/nope');
    const res = await call(server.baseURL, '/metrics');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('text/plain');
    expect(res.text).toMatch(
      /slipway_http_requests_total\{method="GET",route="\/healthz",status="200"\} [1-9]/,
    );
    expect(res.text).toMatch(/slipway_http_requests_total\{[^}]*route="unmatched",status="404"\}/);
    expect(res.text).toMatch(
      /slipway_http_request_duration_seconds_bucket\{le="0.005",method="GET",route="\/healthz"/,
    );
  });
});

describe('binding and TLS', () => {
  it('refuses to start without auth on a non-loopback address', async () => {
    await expect(
      startTestServer({ auth: { enabled: false }, server: { listen: '0.0.0.0:0' } }),
    ).rejects.toThrow(/auth.devInsecure/);
  });

  it('starts without auth on a non-loopback address when auth.devInsecure is true', async () => {
    const server = await startTestServer({
      auth: { enabled: false, devInsecure: true },
      server: { listen: '0.0.0.0:0' },
    });
    try {
      expect(server.baseURL).toMatch(/^http:\/\/localhost:\d+$/);
      expect((await call(server.baseURL, '/healthz')).status).toBe(200);
    } finally {
      await server.stop();
    }
  });

  it('serves HTTPS with a self-signed certificate for localhost, loopback and the hostname', async () => {
    const server = await startTestServer({ auth: { enabled: false, tls: { autoTLS: true } } });
    try {
      expect(server.baseURL.startsWith('https://')).toBe(true);
      const certPem = readFileSync(join(server.dataDir, 'tls', 'auto-cert.pem'), 'utf8');
      const cert = new X509Certificate(certPem);
      expect(cert.subjectAltName).toContain('DNS:localhost');
      expect(cert.subjectAltName).toContain('IP Address:127.0.0.1');
      expect(cert.subjectAltName).toMatch(/IP Address:0:0:0:0:0:0:0:1|IP Address:::1/);
      const body = await httpsGet(`${server.baseURL}/healthz`, certPem);
      expect(JSON.parse(body)).toEqual({ status: 'ok' });
    } finally {
      await server.stop();
    }
  });

  it('serves HTTPS from certFile and keyFile', async () => {
    const first = await startTestServer({ auth: { enabled: false, tls: { autoTLS: true } } });
    await first.close();
    const tlsDir = join(first.dataDir, 'tls');
    const server = await startTestServer({
      auth: {
        enabled: false,
        tls: {
          enabled: true,
          certFile: join(tlsDir, 'auto-cert.pem'),
          keyFile: join(tlsDir, 'auto-key.pem'),
        },
      },
    });
    try {
      const certPem = readFileSync(join(tlsDir, 'auto-cert.pem'), 'utf8');
      expect(await httpsGet(`${server.baseURL}/healthz`, certPem)).toContain('ok');
    } finally {
      await server.stop();
      await first.stop();
    }
  });

  it('refuses TLS without a certificate source', async () => {
    const attempt = startTestServer({ auth: { enabled: false, tls: { enabled: true } } });
    await expect(attempt).rejects.toBeInstanceOf(ConfigError);
    await expect(attempt).rejects.toThrow(/certFile and keyFile, or autoTLS/);
  });
});

describe('npm start with bad configuration', () => {
  it('stops with one line naming the key', () => {
    const result = spawnSync(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
      env: { ...process.env, SVC_AUTH_IDENTITY_CACHE_TTL: '7d', SVC_DATA_DIR: '/nonexistent' },
      encoding: 'utf8',
      timeout: 20_000,
    });
    expect(result.status).toBe(2);
    expect(result.stderr.trim()).toBe(
      'config: auth.identityCacheTTL: must be a duration such as 30s, 5m or 1h30m',
    );
  });
});

function httpsGet(url: string, ca: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = request(url, { ca, servername: 'localhost' }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('end', () => resolve(text));
    });
    req.on('error', reject);
    req.end();
  });
}
