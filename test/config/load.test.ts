import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config/load.js';

const dir = mkdtempSync(join(tmpdir(), 'slipway-config-'));
function yamlFile(text: string): string {
  const path = join(dir, `c${Math.random().toString(36).slice(2)}.yaml`);
  writeFileSync(path, text);
  return path;
}

function errorOf(env: Record<string, string>): string {
  try {
    loadConfig(env);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as Error).message;
  }
  throw new Error('expected a ConfigError');
}

describe('loadConfig', () => {
  it('has embedded defaults: sqlite under ./data, local runtime, apikey auth', () => {
    const config = loadConfig({});
    expect(config.server.listen).toBe('127.0.0.1:8080');
    expect(config.server.dataDir).toBe('./data');
    expect(config.store.backend).toBe('sqlite');
    expect(config.runtime.backend).toBe('local');
    expect(config.auth).toMatchObject({ enabled: true, mode: 'apikey', identityCacheTTL: '30s' });
    expect(config.limits.maxConcurrentLogStreamsPerUser).toBe(10);
  });

  it('reads the YAML file named by SVC_CONFIG', () => {
    const path = yamlFile(
      [
        'server:',
        '  baseURL: https://deploy.example.com',
        'auth:',
        '  mode: oidc',
        '  oidc: { issuer: https://idp.example.com, audience: slipway, roleClaim: realm_access.roles }',
        'limits: { maxConcurrentLogStreamsPerUser: 3 }',
        'store: { backend: memory }',
      ].join('\n'),
    );
    const config = loadConfig({ SVC_CONFIG: path });
    expect(config.server.baseURL).toBe('https://deploy.example.com');
    expect(config.auth.oidc.roleClaim).toBe('realm_access.roles');
    expect(config.limits.maxConcurrentLogStreamsPerUser).toBe(3);
    expect(config.store.backend).toBe('memory');
  });

  it('takes store.backend configmap with the kubernetes namespace it lives in', () => {
    const config = loadConfig({
      SVC_STORE_BACKEND: 'configmap',
      SVC_KUBERNETES_NAMESPACE: 'deploys',
    });
    expect(config.store.backend).toBe('configmap');
    expect(config.kubernetes.namespace).toBe('deploys');
  });

  it("takes the control plane's own pod from SVC_POD_* (the chart's downward API)", () => {
    const config = loadConfig({
      SVC_POD_NAME: 'slipway-0',
      SVC_POD_UID: '0c7e1f9a-3b52-4f0e-9d61-2a8c5e7b4d10',
      SVC_POD_IP: '10.244.1.17',
    });
    expect(config.runtime.kubernetes.egress.pod).toEqual({
      name: 'slipway-0',
      uid: '0c7e1f9a-3b52-4f0e-9d61-2a8c5e7b4d10',
      ip: '10.244.1.17',
    });
    expect(() => loadConfig({ SVC_POD_NAME: 'slipway-0', SVC_POD_IP: '10.244.1.17' })).toThrow(
      /runtime\.kubernetes\.egress\.pod\.uid/,
    );
    expect(() =>
      loadConfig({ SVC_POD_NAME: 'a', SVC_POD_UID: 'b', SVC_POD_IP: 'not-an-ip' }),
    ).toThrow(/runtime\.kubernetes\.egress\.pod\.ip/);
  });

  it('lets SVC_* variables override the file', () => {
    const path = yamlFile('server: { listen: "127.0.0.1:9000" }\nauth: { enabled: true }\n');
    const config = loadConfig({
      SVC_CONFIG: path,
      SVC_LISTEN: '0.0.0.0:7000',
      SVC_AUTH_ENABLED: 'false',
      SVC_AUTH_MODE: 'oauth',
      SVC_AUTH_OIDC_ISSUER: 'https://idp',
      SVC_AUTH_OIDC_AUDIENCE: 'aud',
      SVC_AUTH_OIDC_ADMIN_ROLE: 'boss',
      SVC_TLS_ENABLED: 'true',
      SVC_TLS_CERT_FILE: '/c.pem',
      SVC_TLS_KEY_FILE: '/k.pem',
      SVC_TLS_AUTO: '0',
      SVC_DATA_DIR: '/var/lib/slipway',
      SVC_BASE_URL: 'http://x.test:7000',
    });
    expect(config.server.listen).toBe('0.0.0.0:7000');
    expect(config.server.dataDir).toBe('/var/lib/slipway');
    expect(config.server.baseURL).toBe('http://x.test:7000');
    expect(config.auth.enabled).toBe(false);
    expect(config.auth.mode).toBe('oauth');
    expect(config.auth.oidc).toMatchObject({
      issuer: 'https://idp',
      audience: 'aud',
      adminRole: 'boss',
    });
    expect(config.auth.tls).toMatchObject({
      enabled: true,
      certFile: '/c.pem',
      keyFile: '/k.pem',
      autoTLS: false,
    });
  });

  it('SVC_AUTH_API_KEY alone enables apikey auth with one admin key named default', () => {
    const config = loadConfig({ SVC_AUTH_API_KEY: 'secret-1', SVC_AUTH_ENABLED: 'false' });
    expect(config.auth.enabled).toBe(true);
    expect(config.auth.mode).toBe('apikey');
    expect(config.auth.apiKeys).toEqual([
      { key: 'secret-1', name: 'default', role: 'admin', scopes: [] },
    ]);
  });

  it.each([
    [{ SVC_AUTH_ENABLED: 'maybe' }, 'SVC_AUTH_ENABLED must be true or false'],
    [{ SVC_LISTEN: 'nowhere' }, 'server.listen: must be host:port'],
    [{ SVC_AUTH_IDENTITY_CACHE_TTL: '7d' }, 'auth.identityCacheTTL: must be a duration'],
    [{ SVC_STORE_BACKEND: 'postgres' }, 'store.backend'],
    [{ SVC_BASE_URL: 'not a url' }, 'server.baseURL'],
    [{ SVC_MAX_LOG_STREAMS_PER_USER: 'ten' }, 'SVC_MAX_LOG_STREAMS_PER_USER must be an integer'],
  ])('rejects %j with one line naming the key', (env, expected) => {
    const message = errorOf(env);
    expect(message).toContain(expected);
    expect(message).not.toContain('\n');
  });

  it.each([
    ['auth:\n  apiKeys:\n    - { key: "", name: ci }\n', 'auth.apiKeys.0.key: must not be empty'],
    ['auth:\n  apiKeys:\n    - { key: k, name: "bad name" }\n', 'auth.apiKeys.0.name'],
    ['auth:\n  enabled: "yes please"\n', 'auth.enabled'],
    ['limits:\n  maxSourceBytes: -1\n', 'limits.maxSourceBytes'],
    ['serverr:\n  listen: x\n', 'unknown key serverr'],
    ['auth:\n  oidc:\n    issuer: x\n    bogus: 1\n', 'unknown key auth.oidc.bogus'],
    ['- just\n- a list\n', 'must hold a mapping'],
    ['server: [unclosed\n', 'is not valid YAML'],
  ])('rejects file %j with one line naming the key', (text, expected) => {
    const message = errorOf({ SVC_CONFIG: yamlFile(text) });
    expect(message).toContain(expected);
    expect(message.startsWith('config: ')).toBe(true);
    expect(message).not.toContain('\n');
  });

  it('names a missing config file', () => {
    expect(errorOf({ SVC_CONFIG: join(dir, 'absent.yaml') })).toContain('cannot read SVC_CONFIG');
  });
});
