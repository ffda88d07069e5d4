import { describe, expect, it } from 'vitest';
import { cancellations, InFlightCalls } from '../../src/mcp/in-flight.js';

describe('InFlightCalls: a notifications/cancelled reaches only the call it names', () => {
  it("cancels the caller's own call by request id, and no other caller's with the same id", () => {
    const calls = new InFlightCalls();
    const alices = calls.begin('alice', 7);
    const bobs = calls.begin('bob', 7);
    expect(calls.cancel('bob', 7, 'stop')).toBe(true);
    expect(bobs.signal.aborted).toBe(true);
    expect(alices.signal.aborted).toBe(false);
    // A string id is another id than the number it spells.
    expect(calls.cancel('alice', '7')).toBe(false);
    expect(alices.signal.aborted).toBe(false);
  });

  it('cancels neither of two running calls of one caller with the same id, nor a finished one', () => {
    const calls = new InFlightCalls();
    const one = calls.begin('alice', 1);
    const two = calls.begin('alice', 1);
    expect(calls.cancel('alice', 1)).toBe(false);
    expect([one.signal.aborted, two.signal.aborted]).toEqual([false, false]);
    two.done();
    expect(calls.cancel('alice', 1)).toBe(true);
    expect(one.signal.aborted).toBe(true);
    one.done();
    expect(calls.cancel('alice', 1)).toBe(false);
  });

  it('reads the cancellations of a message or a batch, and nothing else', () => {
    const cancel = (requestId: unknown, extra: object = {}) => ({
      jsonrpc: '2.0',
      method: 'notifications/cancelled',
      params: { requestId, ...extra },
    });
    expect(cancellations(cancel(3, { reason: 'bored' }))).toEqual([
      { requestId: 3, reason: 'bored' },
    ]);
    expect(cancellations([cancel('a'), { jsonrpc: '2.0', id: 1, method: 'tools/list' }])).toEqual([
      { requestId: 'a' },
    ]);
    // A request (it has an id), a bad id, or no params: none of them cancels anything.
    expect(cancellations({ ...cancel(3), id: 9 })).toEqual([]);
    expect(cancellations(cancel({ id: 3 }))).toEqual([]);
    expect(cancellations({ jsonrpc: '2.0', method: 'notifications/cancelled' })).toEqual([]);
    expect(cancellations('notifications/cancelled')).toEqual([]);
  });
});
