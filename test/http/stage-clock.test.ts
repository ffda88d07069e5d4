import { describe, expect, it } from 'vitest';
import { parseServerTiming, StageClock } from '../../src/stage-clock.js';

/** A stage clock on a clock the test moves by hand. */
function manual() {
  let at = 1_000;
  const clock = new StageClock(() => at);
  return { clock, pass: (ms: number) => (at += ms) };
}

describe('StageClock', () => {
  it('times each stage from the mark before it, in order', () => {
    const { clock, pass } = manual();
    pass(3);
    clock.mark('parse');
    pass(6);
    clock.mark('claim');
    expect(clock.stages()).toEqual({ parse: 3, claim: 6 });
  });

  it('carves the parts timed elsewhere out of the stage that contains them', () => {
    const { clock, pass } = manual();
    pass(10);
    clock.mark('inject', { unpack: 4, 'app-start': 3 });
    const stages = clock.stages();
    expect(Object.keys(stages)).toEqual(['unpack', 'app-start', 'inject']);
    // What is left of 10 ms once 7 are accounted for elsewhere.
    expect(stages).toEqual({ unpack: 4, 'app-start': 3, inject: 3 });
  });

  it('ignores parts that are not durations, and never shows a negative rest', () => {
    const { clock } = manual();
    clock.mark('inject', { unpack: Number.NaN, 'app-start': -1, other: 1_000 });
    expect(clock.stages()).toEqual({ other: 1_000, inject: 0 });
  });

  it('lists work that ran beside the stages without taking it from the next one', () => {
    const { clock, pass } = manual();
    pass(2);
    clock.mark('rows');
    clock.aside({ 'ahead-claim': 1.5, 'ahead-unpack': Number.NaN, 'ahead-inject': -1 });
    pass(3);
    clock.mark('inject');
    expect(clock.stages()).toEqual({ rows: 2, 'ahead-claim': 1.5, inject: 3 });
  });

  it('sums a stage marked twice (a retried claim)', () => {
    const { clock, pass } = manual();
    pass(2);
    clock.mark('claim');
    pass(2.5);
    clock.mark('claim');
    expect(clock.stages()).toEqual({ claim: 4.5 });
  });

  it('reads the monotonic clock by default', () => {
    const clock = new StageClock();
    const before = performance.now();
    while (performance.now() - before < 2);
    clock.mark('parse');
    expect(clock.stages().parse).toBeGreaterThanOrEqual(2);
  });

  it('renders a Server-Timing header that reads back to the same stages', () => {
    const { clock, pass } = manual();
    pass(2.04);
    clock.mark('parse', { unpack: 1.25 });
    const header = clock.header();
    expect(header).toBe('unpack;dur=1.3, parse;dur=0.8');
    expect(parseServerTiming(header)).toEqual(clock.stages());
    expect(parseServerTiming(null)).toEqual({});
    expect(parseServerTiming('cache;desc="hit", db;dur=53')).toEqual({ db: 53 });
  });
});
