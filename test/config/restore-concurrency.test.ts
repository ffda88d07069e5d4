import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig, parseConfig } from '../../src/config/load.js';

describe('runtime.restoreConcurrency', () => {
  it('lets 4 cold starts of a restart run at once unless told otherwise', () => {
    expect(loadConfig({}).runtime.restoreConcurrency).toBe(4);
    expect(parseConfig({ runtime: { restoreConcurrency: 16 } }).runtime.restoreConcurrency).toBe(
      16,
    );
  });

  it.each([0, 1.5, 257, 'many'])('refuses %s, naming the key', (value) => {
    expect(() => parseConfig({ runtime: { restoreConcurrency: value } })).toThrow(ConfigError);
    expect(() => parseConfig({ runtime: { restoreConcurrency: value } })).toThrow(
      /runtime\.restoreConcurrency/,
    );
  });
});
