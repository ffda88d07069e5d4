/**
 * Who owns a sibling runtime dir, as another instance's start reads it before sweeping
 * (runtime-dir.ts): a live or starting instance's dir is never taken for a killed one's.
 */
import { mkdirSync, mkdtempSync, readdirSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { claimRuntimeDir, deadSibling } from '../../src/runtime/local/runtime-dir.js';

describe('the owner of a sibling runtime dir', () => {
  let parent: string;
  let dataDir: string;
  const ours = () => join(parent, 'aaaaaaaaaaaa');
  const sibling = () => join(parent, 'bbbbbbbbbbbb');
  const ownerOf = (dir: string) => join(dir, 'owner');
  /** Backdates a path past the grace a sibling with no owner gets (60 s). */
  const age = (path: string) => utimesSync(path, new Date(0), new Date(0));

  beforeEach(() => {
    parent = mkdtempSync(join(tmpdir(), 'slipway-rtdir-'));
    dataDir = mkdtempSync(join(tmpdir(), 'slipway-rtdir-data-'));
    for (const dir of [ours(), sibling()]) mkdirSync(dir);
  });
  afterEach(() => {
    rmSync(parent, { recursive: true, force: true });
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('is alive while its process runs, and leaves no partial file behind', () => {
    claimRuntimeDir(sibling(), dataDir);
    expect(deadSibling(ours(), 'bbbbbbbbbbbb')).toBeUndefined();
    expect(readdirSync(sibling())).toEqual(['owner']);
  });

  it('is dead once its process is gone, and names the data dir it served', () => {
    writeFileSync(ownerOf(sibling()), `999999999 1\n${JSON.stringify(dataDir)}\n`);
    expect(deadSibling(ours(), 'bbbbbbbbbbbb')).toEqual({ id: 'bbbbbbbbbbbb', dataDir });
  });

  it.each([
    ['an empty owner file (one caught mid-write)', ''],
    ['an owner file without a start time', '4242\n'],
    ['a garbled owner file', 'not an owner\n'],
  ])('takes %s for no owner: unknown while it is fresh, abandoned once old', (_, text) => {
    writeFileSync(ownerOf(sibling()), text);
    expect(deadSibling(ours(), 'bbbbbbbbbbbb')).toBeUndefined();
    age(ownerOf(sibling()));
    expect(deadSibling(ours(), 'bbbbbbbbbbbb')).toEqual({
      id: 'bbbbbbbbbbbb',
      dataDir: undefined,
    });
  });

  it('is unknown while a dir with no owner file is fresh; abandoned once old', () => {
    expect(deadSibling(ours(), 'bbbbbbbbbbbb')).toBeUndefined();
    age(sibling());
    expect(deadSibling(ours(), 'bbbbbbbbbbbb')).toEqual({
      id: 'bbbbbbbbbbbb',
      dataDir: undefined,
    });
  });
});
