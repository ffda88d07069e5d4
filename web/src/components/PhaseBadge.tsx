import type { Phase } from '../lib/types';

/** The phase as a word with a colour: the word carries the meaning, the colour only helps. */
export function PhaseBadge({ phase }: { phase: Phase | 'Deleted' }) {
  return <span class={`badge phase-${phase.toLowerCase()}`}>{phase}</span>;
}
