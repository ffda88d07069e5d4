// Types for ci-counts.mjs, which stays plain JavaScript so CI can run it without dependencies.
export interface Counts {
  passed: number;
  failed: number;
  skipped: number;
}

export interface SuiteCounts extends Counts {
  note: string;
}

export type SuiteKind = 'step' | 'vitest' | 'junit';

export function vitestCounts(json: string): Counts;
export function junitCounts(xml: string): Counts;
export function suiteCounts(
  kind: SuiteKind,
  report: string | undefined,
  exitCode: number | undefined,
): SuiteCounts;
export function total(counts: Counts[]): Counts;
export function formatCounts(counts: Counts): string;
