/**
 * The dashboard's reads that run again on every event (web/src/lib/newest-only.ts): answers that
 * arrive out of order never put an older state on the page (a dashboard test saw a redeployed
 * app's page go back to showing the version before, and lose the rollback button for it).
 */
import { describe, expect, it } from 'vitest';
import { newestOnly } from '../../web/src/lib/newest-only.js';

/** A read whose answers the test hands out in any order, and what the page was given. */
function harness() {
  const pending: { resolve: (v: string) => void; reject: (e: Error) => void }[] = [];
  const given: string[] = [];
  const refresh = newestOnly(
    () => new Promise<string>((resolve, reject) => pending.push({ resolve, reject })),
    (value) => given.push(value),
    (err) => given.push(`failed: ${String(err)}`),
  );
  return { pending, given, refresh };
}

describe('newestOnly', () => {
  it('uses only the newest call’s answer when an older one arrives after it', async () => {
    const { pending, given, refresh } = harness();
    const first = refresh();
    const second = refresh();
    pending[1]!.resolve('new');
    await second;
    pending[0]!.resolve('old');
    await first;
    expect(given).toEqual(['new']);
  });

  it('uses each answer of calls that do not overlap', async () => {
    const { pending, given, refresh } = harness();
    const first = refresh();
    pending[0]!.resolve('a');
    await first;
    const second = refresh();
    pending[1]!.resolve('b');
    await second;
    expect(given).toEqual(['a', 'b']);
  });

  it('reports the newest call’s failure and drops a replaced call’s', async () => {
    const { pending, given, refresh } = harness();
    const first = refresh();
    const second = refresh();
    pending[0]!.reject(new Error('old'));
    await first;
    expect(given).toEqual([]);
    pending[1]!.reject(new Error('new'));
    await second;
    expect(given).toEqual(['failed: Error: new']);
  });
});
