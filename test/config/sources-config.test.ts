import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig, parseConfig } from '../../src/config/load.js';
import { openSourceStore } from '../../src/sources/open-source-store.js';

function errorOf(raw: unknown): string {
  try {
    parseConfig(raw);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as Error).message;
  }
  throw new Error('expected a ConfigError');
}

describe('sources config', () => {
  it('defaults to the served backend, with short pre-signed URLs ready for s3', () => {
    expect(loadConfig({}).sources).toEqual({
      backend: 'served',
      quarantineRetention: '168h',
      s3: {
        region: 'us-east-1',
        prefix: '',
        forcePathStyle: false,
        presignExpiry: '5m',
        timeout: '10s',
      },
    });
  });

  it('takes every s3 setting from SVC_SOURCES_* variables', () => {
    const config = loadConfig({
      SVC_SOURCES_BACKEND: 's3',
      SVC_SOURCES_S3_ENDPOINT: 'http://127.0.0.1:9000',
      SVC_SOURCES_S3_REGION: 'eu-west-3',
      SVC_SOURCES_S3_BUCKET: 'team.sources-1',
      SVC_SOURCES_S3_PREFIX: 'slipway/prod/',
      SVC_SOURCES_S3_FORCE_PATH_STYLE: 'yes',
      SVC_SOURCES_S3_PRESIGN_EXPIRY: '90s',
      SVC_SOURCES_S3_TIMEOUT: '2s',
    });
    expect(config.sources).toEqual({
      backend: 's3',
      quarantineRetention: '168h',
      s3: {
        endpoint: 'http://127.0.0.1:9000',
        region: 'eu-west-3',
        bucket: 'team.sources-1',
        prefix: 'slipway/prod/',
        forcePathStyle: true,
        presignExpiry: '90s',
        timeout: '2s',
      },
    });
  });

  it.each([
    [{ backend: 's3' }, 'config: sources.s3.bucket: is required when sources.backend is "s3"'],
    [{ backend: 'disk' }, 'config: sources.backend:'],
    [{ s3: { bucket: 'No_Caps' } }, 'config: sources.s3.bucket: must be an S3 bucket name'],
    [{ s3: { endpoint: 'ftp://store' } }, 'config: sources.s3.endpoint: must be an absolute'],
    [{ s3: { prefix: '/abs/' } }, 'config: sources.s3.prefix: must be empty or folder names'],
    [{ s3: { prefix: 'no-slash' } }, 'config: sources.s3.prefix: must be empty or folder names'],
    [{ s3: { presignExpiry: '2h' } }, 'config: sources.s3.presignExpiry: must be at most 1h'],
    [{ s3: { presignExpiry: '500ms' } }, 'config: sources.s3.presignExpiry: must be at least 1s'],
    [{ s3: { timeout: '10ms' } }, 'config: sources.s3.timeout: must be at least 100ms'],
    [{ s3: { accessKeyId: 'AKIA...' } }, 'config: unknown key sources.s3.accessKeyId'],
  ])('refuses %j with one line naming the key', (sources, message) => {
    expect(errorOf({ sources })).toContain(message);
  });

  it('refuses a non-boolean SVC_SOURCES_S3_FORCE_PATH_STYLE', () => {
    expect(() => loadConfig({ SVC_SOURCES_S3_FORCE_PATH_STYLE: 'maybe' })).toThrow(
      'config: SVC_SOURCES_S3_FORCE_PATH_STYLE must be true or false, got "maybe"',
    );
  });

  it('opens the store the backend names', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'slipway-open-sources-'));
    try {
      const served = await openSourceStore(parseConfig({ server: { dataDir } }));
      expect(served.backend).toBe('served');
      expect(served.presignGet).toBeUndefined();
      const s3 = await openSourceStore(
        parseConfig({
          server: { dataDir },
          sources: { backend: 's3', s3: { bucket: 'sources', endpoint: 'http://127.0.0.1:9' } },
        }),
      );
      expect(s3.backend).toBe('s3');
      expect(typeof s3.presignGet).toBe('function');
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
