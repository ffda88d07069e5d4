import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { UNHEALTHY_MESSAGE, WindowProbe } from '../../src/actors/window-probe.js';
import { useFakeClock } from './harness.js';

/** A probe whose health answers come from `answers`, in order (then: healthy). */
function probe(answers: boolean[]) {
  const checked: string[] = [];
  const reports: Array<[string, string]> = [];
  const p = new WindowProbe({
    everyMs: 100,
    health: async (id) => {
      checked.push(id);
      return answers.shift() ?? true;
    },
    unhealthy: (id, message) => void reports.push([id, message]),
  });
  return { p, checked, reports };
}

describe('WindowProbe: the new release is checked while its window is open', () => {
  beforeEach(useFakeClock);
  afterEach(() => void vi.useRealTimers());

  it('reports only three failures in a row; a success in between starts the count again', async () => {
    const { p, checked, reports } = probe([false, false, true, false, false, false]);
    p.follow('sb-2');
    await vi.advanceTimersByTimeAsync(500);
    expect(reports).toEqual([]);
    await vi.advanceTimersByTimeAsync(100);
    expect(reports).toEqual([['sb-2', UNHEALTHY_MESSAGE]]);
    expect(checked).toHaveLength(6);
    // Reported once, then it stops probing.
    await vi.advanceTimersByTimeAsync(1_000);
    expect(checked).toHaveLength(6);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('stops when the window closes, and a late answer reports nothing', async () => {
    let answer: (ok: boolean) => void = () => undefined;
    const reports: string[] = [];
    const p = new WindowProbe({
      everyMs: 100,
      health: () => new Promise<boolean>((resolve) => (answer = resolve)),
      unhealthy: (id) => void reports.push(id),
    });
    p.follow('sb-2');
    await vi.advanceTimersByTimeAsync(100); // a check is on its way
    p.follow(undefined);
    answer(false);
    await vi.advanceTimersByTimeAsync(1_000);
    expect(reports).toEqual([]);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('follows the same sandbox once, and a new one from a fresh count', async () => {
    const { p, checked, reports } = probe([false, false, false, false, false]);
    p.follow('sb-2');
    await vi.advanceTimersByTimeAsync(200);
    p.follow('sb-2'); // the same window: nothing restarts
    expect(vi.getTimerCount()).toBe(1);
    p.follow('sb-3');
    await vi.advanceTimersByTimeAsync(200);
    expect(reports).toEqual([]);
    await vi.advanceTimersByTimeAsync(100);
    expect(reports).toEqual([['sb-3', UNHEALTHY_MESSAGE]]);
    expect(checked).toEqual(['sb-2', 'sb-2', 'sb-3', 'sb-3', 'sb-3']);
  });
});
