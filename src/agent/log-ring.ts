import { RING_LINES } from './protocol.js';

export interface RingLine {
  time: string;
  stream: 'stdout' | 'stderr';
  text: string;
}

/** The app's last RING_LINES lines, timestamped as they were written. */
export class LogRing {
  private readonly lines: RingLine[] = [];
  private readonly partial = { stdout: '', stderr: '' };
  /** Writes ever fed in, whole lines or not: grows while the app talks. */
  written = 0;
  private readonly listeners: ((line: RingLine) => void)[] = [];

  /** Every line from now on, as it completes. */
  onLine(listener: (line: RingLine) => void): void {
    this.listeners.push(listener);
  }

  /** Feeds raw output; complete lines are kept, a trailing partial line waits for its end. */
  write(stream: 'stdout' | 'stderr', chunk: string): void {
    this.written += 1;
    const text = this.partial[stream] + chunk;
    const parts = text.split('\n');
    this.partial[stream] = parts.pop() ?? '';
    for (const part of parts) this.push(stream, part);
    // A line that never ends must not grow without bound.
    if (this.partial[stream].length > 16_384) {
      this.push(stream, this.partial[stream]);
      this.partial[stream] = '';
    }
  }

  /** Ends any partial lines (the app is gone, nothing will complete them). */
  flush(): void {
    for (const stream of ['stdout', 'stderr'] as const) {
      if (this.partial[stream] !== '') this.push(stream, this.partial[stream]);
      this.partial[stream] = '';
    }
  }

  last(n: number): RingLine[] {
    return this.lines.slice(Math.max(0, this.lines.length - n));
  }

  private push(stream: 'stdout' | 'stderr', text: string): void {
    const line: RingLine = {
      time: new Date().toISOString(),
      stream,
      text: text.replace(/\r$/, ''),
    };
    this.lines.push(line);
    for (const listener of this.listeners) listener(line);
    if (this.lines.length > RING_LINES) this.lines.splice(0, this.lines.length - RING_LINES);
  }
}

export const ring = new LogRing();

/**
 * Taps the agent's own stdout/stderr: a node app runs in this process, so what it writes there is
 * its output. The write itself still goes to fds 1/2, where the host reads it.
 */
export function tapProcessOutput(): void {
  for (const stream of ['stdout', 'stderr'] as const) {
    const target = process[stream];
    const original = target.write.bind(target) as (...args: unknown[]) => boolean;
    const tapped = (chunk: unknown, ...rest: unknown[]): boolean => {
      if (typeof chunk === 'string') ring.write(stream, chunk);
      else if (chunk instanceof Uint8Array) ring.write(stream, Buffer.from(chunk).toString('utf8'));
      return original(chunk, ...rest);
    };
    target.write = tapped as typeof target.write;
  }
}
