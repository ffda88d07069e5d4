import { describe, expect, it } from 'vitest';
import { RecentBlobs } from '../../src/sources/recent-blobs.js';

describe('RecentBlobs', () => {
  const blob = (n: number, fill = 1) => Buffer.alloc(n, fill);

  it('keeps a copy of what it is given, not the caller buffer', () => {
    const recent = new RecentBlobs({ maxBlob: 100, maxTotal: 1000, ttlMs: 1000 });
    const data = blob(10);
    recent.add('a', data);
    data.fill(9);
    expect(recent.get('a', 100)).toEqual(blob(10));
    expect(recent.get('a', 9)).toBeUndefined();
    expect(recent.get('b', 100)).toBeUndefined();
  });

  it('keeps nothing over its blob cap, and drops the oldest past its total', () => {
    const recent = new RecentBlobs({ maxBlob: 50, maxTotal: 100, ttlMs: 1000 });
    recent.add('big', blob(51));
    expect(recent.get('big', 1000)).toBeUndefined();
    recent.add('a', blob(40));
    recent.add('b', blob(40));
    recent.add('c', blob(40));
    expect(recent.get('a', 100)).toBeUndefined();
    expect(recent.get('b', 100)).toBeDefined();
    expect(recent.get('c', 100)).toBeDefined();
    // Re-added: counted once.
    recent.add('c', blob(40));
    expect(recent.get('b', 100)).toBeDefined();
  });

  it('forgets a blob that is dropped or older than its TTL', () => {
    let now = 0;
    const recent = new RecentBlobs({ maxBlob: 50, maxTotal: 100, ttlMs: 1000 }, () => now);
    recent.add('a', blob(10));
    recent.add('b', blob(10));
    recent.drop('a');
    expect(recent.get('a', 100)).toBeUndefined();
    now = 1000;
    expect(recent.get('b', 100)).toBeDefined();
    now = 1001;
    expect(recent.get('b', 100)).toBeUndefined();
  });
});
