import { describe, expect, it } from 'vitest';
import { judge, summary, TARGETS, targetText, type Measured } from '../../bench/targets.js';

const row = (m: Partial<Measured> & Pick<Measured, 'id' | 'figures'>): Measured => ({
  measured: 'x',
  baseline: 'y',
  ...m,
});

describe('bench targets (design.md §8)', () => {
  it('prints the targets §8 sets, not the old ≤ 1× ones', () => {
    const printed = Object.fromEntries(
      Object.entries(TARGETS).map(([id, target]) => [id, targetText(target)]),
    );
    expect(printed).toMatchObject({
      'deploy p50': '≤ 0.5×',
      'deploy p99': '≤ 1.5×',
      'deploy-static p50': '≤ 0.5×',
      'wake p50': '≤ 0.4×',
      'rollback p50': '≤ 0.3×',
      'wake (general lane) p50': '≤ 1.5×',
      'failed redeploy': '0 failed requests',
      proxy: '≥ 0.8×, p99Ratio ≤ 1.5×, 0 errors',
      api: '≥ 0.7×, 0 errors',
      density: '≤ 1.2×',
      restart: '0 failed requests, 0 ms gap',
    });
  });

  it('meets a bound at its limit and misses it just past', () => {
    expect(judge(row({ id: 'deploy p50', figures: { ratio: 0.5 } })).met).toBe(true);
    const missed = judge(row({ id: 'deploy p50', figures: { ratio: 0.51 } }));
    expect(missed.met).toBe(false);
    expect(missed.missed).toEqual(['≤ 0.5×']);
    expect(judge(row({ id: 'wake p50', figures: { ratio: 0.41 } })).met).toBe(false);
    expect(judge(row({ id: 'rollback p50', figures: { ratio: 0.3 } })).met).toBe(true);
  });

  it('reads "at least" bounds the other way round', () => {
    expect(judge(row({ id: 'api', figures: { ratio: 0.7, errors: 0 } })).met).toBe(true);
    expect(judge(row({ id: 'api', figures: { ratio: 0.69, errors: 0 } })).met).toBe(false);
  });

  it('checks every bound of a row, and a missing or NaN figure never meets one', () => {
    const proxy = judge(row({ id: 'proxy', figures: { ratio: 0.9, p99Ratio: 1.6, errors: 2 } }));
    expect(proxy.missed).toEqual(['p99Ratio ≤ 1.5×', '0 errors']);
    expect(judge(row({ id: 'proxy', figures: { ratio: 0.9 } })).met).toBe(false);
    expect(judge(row({ id: 'density', figures: { ratio: Number.NaN } })).met).toBe(false);
  });

  it('a report row is met unless the run itself went wrong', () => {
    expect(judge(row({ id: 'start', figures: { ratio: 7 } })).met).toBe(true);
    const lost = judge(row({ id: 'burst', figures: { ratio: 0.98, lost: 1 } }));
    expect(lost.missed).toEqual(['0 lost']);
    const broken = judge(
      row({ id: 'failed redeploy', figures: { ratio: 0, failed: 0 }, ok: false }),
    );
    expect(broken.met).toBe(false);
  });

  it('names the row as the table shows it and keeps its stage breakdown', () => {
    const judged = judge(
      row({
        id: 'proxy',
        benchmark: 'proxy (haproxy)',
        figures: { ratio: 1, p99Ratio: 1, errors: 0 },
      }),
    );
    expect(judged.benchmark).toBe('proxy (haproxy)');
    const staged = judge(
      row({ id: 'deploy p50', figures: { ratio: 0.4 }, stages: { claim: 1.5 } }),
    );
    expect(staged.stages).toEqual({ claim: 1.5 });
  });

  it('sums up how many rows missed, and which', () => {
    const rows = [
      judge(row({ id: 'deploy p50', figures: { ratio: 0.9 } })),
      judge(row({ id: 'deploy p99', figures: { ratio: 1.2 } })),
      judge(row({ id: 'wake p50', figures: { ratio: 0.6 } })),
    ];
    expect(summary(rows)).toBe(
      '2 of 3 rows missed their target: deploy p50 (≤ 0.5×); wake p50 (≤ 0.4×)',
    );
    expect(summary(rows.slice(1, 2))).toBe('all 1 rows met their target');
  });
});
