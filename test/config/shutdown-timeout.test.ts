import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config/load.js';
import { durationMs } from '../../src/config/schema.js';

describe('server.shutdownTimeout', () => {
  it('defaults to 30s and takes SVC_SHUTDOWN_TIMEOUT', () => {
    expect(durationMs(loadConfig({}).server.shutdownTimeout)).toBe(30_000);
    const config = loadConfig({ SVC_SHUTDOWN_TIMEOUT: '1m30s' });
    expect(durationMs(config.server.shutdownTimeout)).toBe(90_000);
  });

  it('refuses what is not a duration, naming the key', () => {
    expect(() => loadConfig({ SVC_SHUTDOWN_TIMEOUT: 'soon' })).toThrow(ConfigError);
    expect(() => loadConfig({ SVC_SHUTDOWN_TIMEOUT: 'soon' })).toThrow(/server\.shutdownTimeout/);
  });
});
