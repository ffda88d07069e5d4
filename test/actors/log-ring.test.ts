import { describe, expect, it } from 'vitest';
import { LogRing } from '../../src/actors/log-ring.js';

const at = '2026-01-01T00:00:00.000Z';

describe('an app log ring', () => {
  it("gives the app's own last lines for a diagnosis, without Slipway's notes", () => {
    const ring = new LogRing();
    ring.push({ time: at, stream: 'system', text: '[slipway] version 2 starting', version: 2 });
    ring.push({ time: at, stream: 'stderr', text: 'Error: no PORT', version: 2 });
    // The app's own text, even when it looks like ours, is the app's.
    ring.push({ time: at, stream: 'stdout', text: '[slipway] fake', version: 2 });
    ring.push({ time: at, stream: 'system', text: '[slipway] version 2 failed', version: 2 });
    expect(ring.tail(20)).toEqual(['Error: no PORT', '[slipway] fake']);
    expect(ring.tail(1)).toEqual(['[slipway] fake']);
    expect(ring.all().map((l) => l.version)).toEqual([2, 2, 2, 2]);
  });
});
