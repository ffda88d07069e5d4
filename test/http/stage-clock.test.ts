import { describe, expect, it } from 'vitest';
import { parseServerTiming, StageClock } from '../../src/stage-clock.js';

/** Spins until `ms` have passed on the monotonic clock the stage clock reads. */
function busy(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until);
}

describe('StageClock', () => {
  it('times each stage from the mark before it, in order', () => {
    const clock = new StageClock();
    busy(3);
    clock.mark('parse');
    busy(6);
    clock.mark('claim');
    const stages = clock.stages();
    expect(Object.keys(stages)).toEqual(['parse', 'claim']);
    expect(stages.parse).toBeGreaterThanOrEqual(3);
    expect(stages.claim).toBeGreaterThanOrEqual(6);
  });

  it('carves the parts timed elsewhere out of the stage that contains them', () => {
    const clock = new StageClock();
    busy(10);
    clock.mark('inject', { unpack: 4, 'app-start': 3 });
    const stages = clock.stages();
    expect(Object.keys(stages)).toEqual(['unpack', 'app-start', 'inject']);
    expect(stages.unpack).toBe(4);
    expect(stages['app-start']).toBe(3);
    // What is left of ≥ 10 ms once 7 are accounted for elsewhere.
    expect(stages.inject).toBeGreaterThanOrEqual(3);
    expect(stages.inject).toBeLessThan(10);
  });

  it('ignores parts that are not durations, and never shows a negative rest', () => {
    const clock = new StageClock();
    clock.mark('inject', { unpack: Number.NaN, 'app-start': -1, other: 1_000 });
    expect(clock.stages()).toEqual({ other: 1_000, inject: 0 });
  });

  it('sums a stage marked twice (a retried claim)', () => {
    const clock = new StageClock();
    busy(2);
    clock.mark('claim');
    busy(2);
    clock.mark('claim');
    expect(Object.keys(clock.stages())).toEqual(['claim']);
    expect(clock.stages().claim).toBeGreaterThanOrEqual(4);
  });

  it('renders a Server-Timing header that reads back to the same stages', () => {
    const clock = new StageClock();
    clock.mark('parse', { unpack: 1.25 });
    const header = clock.header();
    expect(header).toMatch(/^unpack;dur=1\.3, parse;dur=[\d.]+$/);
    expect(parseServerTiming(header)).toEqual(clock.stages());
    expect(parseServerTiming(null)).toEqual({});
    expect(parseServerTiming('cache;desc="hit", db;dur=53')).toEqual({ db: 53 });
  });
});
