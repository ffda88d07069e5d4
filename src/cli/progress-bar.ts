import { Presets, SingleBar } from 'cli-progress';

export interface ByteProgress {
  update(sent: number, total: number): void;
  stop(): void;
}

/** An upload bar on stderr (drawn only where a person watches: the caller checks for a TTY). */
export function uploadBar(label: string): ByteProgress {
  const bar = new SingleBar(
    {
      format: `${label} [{bar}] {percentage}% | {value}/{total}`,
      formatValue: (value, _options, type) =>
        type === 'value' || type === 'total' ? formatBytes(value) : String(value),
      stream: process.stderr,
      hideCursor: true,
      clearOnComplete: false,
    },
    Presets.shades_classic,
  );
  let state: 'new' | 'drawing' | 'done' = 'new';
  const stop = (): void => {
    if (state === 'drawing') bar.stop();
    state = 'done';
  };
  return {
    update(sent, total) {
      if (state === 'done') return;
      if (state === 'new') bar.start(total, 0);
      state = 'drawing';
      bar.update(sent);
      // Done with the last byte, not with the answer: phase lines follow while the server works.
      if (sent >= total) stop();
    },
    stop,
  };
}

export function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / 1024 / 1024).toFixed(1)} MiB`;
}
