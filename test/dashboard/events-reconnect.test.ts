/**
 * When the dashboard's event stream connects again (web/src/lib/reconnect.ts): the wait grows
 * only while connecting fails. A stream the server accepted and then ended starts it again at 1 s,
 * so a tab whose streams end without an event is not left without one for half a minute (it was,
 * and the lifecycle events of that half minute were missing from the page).
 */
import { describe, expect, it } from 'vitest';
import { Reconnect } from '../../web/src/lib/reconnect.js';

describe('the event stream’s reconnect wait', () => {
  it('doubles while connecting fails, up to 30 s', () => {
    const reconnect = new Reconnect();
    const waits = Array.from({ length: 8 }, () => reconnect.delay());
    expect(waits).toEqual([1_000, 2_000, 4_000, 8_000, 16_000, 30_000, 30_000, 30_000]);
  });

  it('is 1 s after each stream the server accepted, however many ended before', () => {
    const reconnect = new Reconnect();
    for (let n = 0; n < 6; n += 1) {
      reconnect.opened();
      expect(reconnect.delay()).toBe(1_000);
    }
  });

  it('starts again at 1 s once a stream is accepted after failures', () => {
    const reconnect = new Reconnect();
    for (let n = 0; n < 5; n += 1) reconnect.delay();
    reconnect.opened();
    expect([reconnect.delay(), reconnect.delay()]).toEqual([1_000, 2_000]);
  });
});
