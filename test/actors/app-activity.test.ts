import { describe, expect, it } from 'vitest';
import { AppActivity, LAST_LINE_MAX } from '../../src/actors/app-activity.js';
import type { AppLogLine } from '../../src/actors/log-ring.js';

function activity() {
  let now = Date.parse('2026-01-01T00:00:00.000Z');
  const changes: string[] = [];
  const a = new AppActivity(
    () => now,
    (what) => changes.push(what),
  );
  const line = (version: number, text: string, stream: AppLogLine['stream'] = 'stdout') =>
    a.line({ time: new Date(now).toISOString(), stream, text, version });
  const tick = (ms: number) => void (now += ms);
  return { a, changes, line, tick };
}

describe('AppActivity: what a deploy in flight does, from its phase and its lines', () => {
  it('goes queued, installing, building, starting on the general lane, then none', () => {
    const { a, changes, line, tick } = activity();
    expect(a.view).toBeUndefined();
    a.begin(2);
    expect(a.view).toEqual({ step: 'queued', since: '2026-01-01T00:00:00.000Z' });
    a.phase('Claiming', 2, () => 'general');
    expect(a.view?.step).toBe('queued');
    tick(1000);
    a.phase('Starting', 2, () => 'general');
    expect(a.view).toEqual({ step: 'installing', since: '2026-01-01T00:00:01.000Z' });
    line(2, '[slipway] version 2 building: installing its dependencies', 'system');
    line(2, '[install] $ npm install');
    line(2, '[install] up to date in 1s');
    expect(a.view).toMatchObject({ step: 'installing', last_line: 'up to date in 1s' });
    line(1, '[install] $ npm run build'); // the version that serves: not this deploy's
    expect(a.view?.step).toBe('installing');
    tick(1000);
    line(2, '[install] $ npm run build');
    line(2, '[install] build step 1 of 3');
    line(2, '[install]    '); // blank: the newest line stays
    expect(a.view).toEqual({
      step: 'building',
      since: '2026-01-01T00:00:02.000Z',
      last_line: 'build step 1 of 3',
    });
    line(2, `[install] ${'x'.repeat(LAST_LINE_MAX + 50)}`);
    expect(a.view?.last_line).toHaveLength(LAST_LINE_MAX);
    line(2, '[slipway] version 2 installed in 3.0 s (npm install, npm run build)', 'system');
    expect(a.view?.step).toBe('starting');
    a.phase('Ready', 2, () => 'general');
    expect(a.view).toBeUndefined();
    expect(changes.filter((c) => c === 'step')).toHaveLength(5);
    expect(changes).toContain('line');
  });

  it('checks health once the process is started, and switches only when told', () => {
    const { a, changes, line, tick } = activity();
    a.begin(5);
    a.phase('Starting', 5, () => 'fast');
    a.switching(); // the supervisor says so only for a candidate that answered
    expect(a.view?.step).toBe('switching');
    a.begin(6);
    a.phase('Starting', 6, () => 'fast');
    line(6, '[slipway] version 6: started, waiting for it to answer'); // the app's own print
    expect(a.view?.step).toBe('starting');
    tick(500);
    line(6, '[slipway] version 6: started, waiting for it to answer', 'system');
    expect(a.view).toEqual({ step: 'health-checking', since: '2026-01-01T00:00:00.500Z' });
    tick(500);
    a.switching();
    expect(a.view).toEqual({ step: 'switching', since: '2026-01-01T00:00:01.000Z' });
    a.phase('Ready', 6, () => 'fast');
    expect(a.view).toBeUndefined();
    a.switching(); // nothing in flight: nothing to switch
    expect(a.view).toBeUndefined();
    expect(changes.filter((c) => c === 'step')).toHaveLength(8);
  });

  it('starts at once on the fast lane, and after a restored built tree', () => {
    const fast = activity();
    fast.a.begin(1);
    fast.a.phase('Starting', 1, () => 'fast');
    expect(fast.a.view?.step).toBe('starting');
    const restored = activity();
    restored.a.begin(4);
    restored.a.phase('Starting', 4, () => 'general');
    restored.line(4, '[slipway] version 4: its built tree restored, no install', 'system');
    expect(restored.a.view?.step).toBe('starting');
  });

  it('follows nothing it was not told began: a crash restart, an app printing tags itself', () => {
    const { a, changes, line } = activity();
    a.phase('Starting', 3, () => 'general');
    line(3, '[install] $ npm run build');
    expect(a.view).toBeUndefined();
    expect(changes).toEqual([]);
    a.begin(3);
    a.phase('Failed', 3, () => 'general');
    expect(a.view).toBeUndefined();
  });
});
