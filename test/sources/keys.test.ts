import { describe, expect, it } from 'vitest';
import { isSourceKey, mintSourceKey } from '../../src/sources/keys.js';
import { expectAppError } from './expect-app-error.js';

describe('source keys', () => {
  it('mints <app_id>.v<version>.<32 hex>', () => {
    const key = mintSourceKey('my-app', 7);
    expect(key).toMatch(/^my-app\.v7\.[0-9a-f]{32}$/);
    expect(isSourceKey(key)).toBe(true);
  });

  it('draws 128 fresh random bits per key', () => {
    const keys = Array.from({ length: 2000 }, () => mintSourceKey('app', 1));
    expect(new Set(keys).size).toBe(keys.length);
    // Every hex digit appears in every position across 2000 keys unless the bits are not random.
    const suffixes = keys.map((key) => key.slice(-32));
    for (let position = 0; position < 32; position += 1) {
      expect(new Set(suffixes.map((s) => s[position])).size).toBe(16);
    }
  });

  it('accepts the longest app id and version 0', () => {
    const id = `a${'-'.repeat(61)}b`;
    expect(id).toHaveLength(63);
    expect(isSourceKey(mintSourceKey(id, 0))).toBe(true);
  });

  it('refuses to mint for an invalid app id or version', async () => {
    for (const id of ['', 'A', '-a', 'a-', 'a_b', 'a.b', 'a/b', 'x'.repeat(64)]) {
      await expectAppError(() => mintSourceKey(id, 1), 400, 'bad_request', 'invalid app id');
    }
    for (const version of [-1, 1.5, Number.NaN]) {
      await expectAppError(
        () => mintSourceKey('app', version),
        400,
        'bad_request',
        'invalid version',
      );
    }
  });

  it('recognises only exact keys', () => {
    const hex = '0123456789abcdef0123456789abcdef';
    expect(isSourceKey(`app.v1.${hex}`)).toBe(true);
    expect(isSourceKey(`app.v12.${hex}`)).toBe(true);
    for (const bad of [
      `app.v1.${hex}.tar.gz`,
      `App.v1.${hex}`,
      `app.v01.${hex}`,
      `app.v.${hex}`,
      `app.1.${hex}`,
      `app.v1.${hex.toUpperCase()}`,
      `app.v1.${hex.slice(1)}`,
      `app.v1.${hex}0`,
      `-app.v1.${hex}`,
      `${'x'.repeat(64)}.v1.${hex}`,
      `../app.v1.${hex}`,
      `app/../x.v1.${hex}`,
      `app.v1.${hex}\n`,
      ` app.v1.${hex}`,
      '',
    ]) {
      expect(isSourceKey(bad), bad).toBe(false);
    }
  });
});
