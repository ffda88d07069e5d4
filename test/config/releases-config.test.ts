import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config/load.js';
import { durationMs } from '../../src/config/schema.js';

const dir = mkdtempSync(join(tmpdir(), 'slipway-releases-config-'));
const file = (text: string): string => {
  const path = join(dir, `c${Math.random().toString(36).slice(2)}.yaml`);
  writeFileSync(path, text);
  return path;
};

describe('releases.stabilityWindow', () => {
  it('is 10s unless configured, and 0 turns the window off', () => {
    expect(durationMs(loadConfig({}).releases.stabilityWindow)).toBe(10_000);
    const off = loadConfig({ SVC_CONFIG: file('releases:\n  stabilityWindow: 0s\n') });
    expect(durationMs(off.releases.stabilityWindow)).toBe(0);
    const long = loadConfig({ SVC_CONFIG: file('releases:\n  stabilityWindow: 1m30s\n') });
    expect(durationMs(long.releases.stabilityWindow)).toBe(90_000);
  });

  it.each([
    ['releases:\n  stabilityWindow: soon\n', 'releases.stabilityWindow: must be a duration'],
    ['releases:\n  stabilityWindow: -5s\n', 'releases.stabilityWindow: must not be negative'],
    ['releases:\n  window: 5s\n', 'unknown key releases.window'],
  ])('rejects %j with one line naming the key', (text, expected) => {
    let message = '';
    try {
      loadConfig({ SVC_CONFIG: file(text) });
    } catch (err) {
      expect(err).toBeInstanceOf(ConfigError);
      message = (err as Error).message;
    }
    expect(message).toContain(expected);
    expect(message).not.toContain('\n');
  });
});
