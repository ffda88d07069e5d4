/**
 * A retry's wait: `ms` spread over its upper half by `jitter` (0 ≤ jitter < 1), so that what
 * failed together (apps on a full disk, writes while the store was down, pools when the host ran
 * out of users) does not all come back at the same instant. Pure: the caller draws the jitter.
 */
export function spread(ms: number, jitter: number): number {
  return Math.round(ms / 2 + (ms / 2) * jitter);
}
