/**
 * The targets of design.md §8, one per bench row, and the `met` verdict of a row against its
 * target. A row reports its figures (ratios against its same-run baseline, error counts); its
 * target is a list of bounds on them, and the row meets it when every bound holds. A row whose
 * target is `report` only fails when it says the run itself went wrong (`ok: false`).
 */

export interface Bound {
  /** The figure of the row the bound is on: `ratio` is the row's headline ratio. */
  figure: string;
  at: 'most' | 'least';
  limit: number;
  /** How the limit reads in the table: `×` for ratios, a noun for counts. */
  unit: string;
}

export interface Target {
  bounds: Bound[];
  /** What the row also asks for beyond its bounds (`none lost`), or why it only reports. */
  note?: string;
}

const ratio = (at: Bound['at'], limit: number, figure = 'ratio'): Bound => ({
  figure,
  at,
  limit,
  unit: '×',
});
const count = (figure: string, limit: number, unit: string): Bound => ({
  figure,
  at: 'most',
  limit,
  unit,
});

export const TARGETS = {
  'deploy p50': { bounds: [ratio('most', 0.5)] },
  'deploy p99': { bounds: [ratio('most', 1.5)] },
  'deploy-static p50': { bounds: [ratio('most', 0.5)] },
  'wake p50': { bounds: [ratio('most', 0.4)] },
  'rollback p50': { bounds: [ratio('most', 0.3)] },
  'wake (general lane) p50': { bounds: [ratio('most', 1.5)] },
  'failed redeploy': { bounds: [count('failed', 0, 'failed requests')] },
  proxy: {
    bounds: [ratio('least', 0.8), ratio('most', 1.5, 'p99Ratio'), count('errors', 0, 'errors')],
  },
  api: { bounds: [ratio('least', 0.7), count('errors', 0, 'errors')] },
  density: { bounds: [ratio('most', 1.2)] },
  restart: { bounds: [count('failed', 0, 'failed requests'), count('gapMs', 0, 'ms gap')] },
  burst: { bounds: [count('lost', 0, 'lost')], note: 'report' },
  start: { bounds: [], note: 'report' },
  'k8s-deploy p50': { bounds: [], note: 'report; anchor: agent-sandbox claim p50 92 ms' },
} satisfies Record<string, Target>;

export type RowId = keyof typeof TARGETS;

/** What a row builder measured; the verdict is added by `judge`. */
export interface Measured {
  id: RowId;
  /** The row's name in the table when it says more than its id (`proxy (haproxy)`). */
  benchmark?: string;
  measured: string;
  baseline: string;
  /** `ratio` is the headline; the others are what the row's bounds name. */
  figures: { ratio: number } & Record<string, number>;
  /** False when the run itself went wrong (a deploy lost), whatever the figures say. */
  ok?: boolean;
  /** Per-stage p50s in ms, for rows that can break their time down. */
  stages?: Record<string, number>;
}

export interface Row {
  benchmark: string;
  measured: string;
  baseline: string;
  ratio: number;
  target: string;
  met: boolean;
  /** The bounds the row missed, as the table reads them. */
  missed: string[];
  figures: Record<string, number>;
  stages?: Record<string, number>;
}

/** The target as the table prints it: `≤ 0.5×`, `≥ 0.8×, p99Ratio ≤ 1.5×, 0 errors`. */
export function targetText(target: Target): string {
  const parts = target.bounds.map(boundText);
  if (target.note) parts.push(target.note);
  return parts.join(', ');
}

/** The row with its target and its verdict against it. */
export function judge(m: Measured): Row {
  const target: Target = TARGETS[m.id];
  const missed = target.bounds.filter((b) => !holds(b, m.figures[b.figure])).map(boundText);
  if (m.ok === false) missed.push('the run went wrong');
  return {
    benchmark: m.benchmark ?? m.id,
    measured: m.measured,
    baseline: m.baseline,
    ratio: m.figures.ratio,
    target: targetText(target),
    met: missed.length === 0,
    missed,
    figures: m.figures,
    ...(m.stages ? { stages: m.stages } : {}),
  };
}

/** One line that says how many rows missed their target, and which. */
export function summary(rows: Row[]): string {
  const missed = rows.filter((r) => !r.met);
  if (missed.length === 0) return `all ${rows.length} rows met their target`;
  const which = missed.map((r) => `${r.benchmark} (${r.missed.join(', ')})`).join('; ');
  return `${missed.length} of ${rows.length} rows missed their target: ${which}`;
}

/** A figure that is missing or not a number never meets a bound. */
function holds(bound: Bound, value: number | undefined): boolean {
  if (value === undefined || Number.isNaN(value)) return false;
  return bound.at === 'most' ? value <= bound.limit : value >= bound.limit;
}

function boundText(b: Bound): string {
  if (b.unit !== '×') return `${b.limit} ${b.unit}`;
  const name = b.figure === 'ratio' ? '' : `${b.figure} `;
  return `${name}${b.at === 'most' ? '≤' : '≥'} ${b.limit}×`;
}
