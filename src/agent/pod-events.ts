import { writeSync } from 'node:fs';
import type { Socket } from 'node:net';
import type { LogRing, RingLine } from './log-ring.js';
import type { ExitReport } from './protocol.js';

/** At most one activity event per this long: a busy app must not flood the stream. */
const ACTIVITY_EVERY_MS = 1_000;
/** A stream that does not drain is dropped rather than buffered without bound. */
const MAX_BUFFERED = 1024 * 1024;

const HEAD =
  'HTTP/1.1 200 OK\r\ncontent-type: application/x-ndjson\r\ncache-control: no-store\r\n' +
  'connection: close\r\n\r\n';

/**
 * A pod agent's event stream (`GET /events`, NDJSON until the connection closes): the app's log
 * lines as it prints them, `activity` while visitors connect, and the app's `exit`. In a bwrap
 * sandbox the host reads these from the sandbox's fds; a pod has only the network. The body is
 * written raw (no chunked framing), so the exit can still be written synchronously from the
 * process's 'exit' event, when an app's own process.exit() leaves no turn of the loop.
 */
export class PodEvents {
  private readonly streams = new Set<Socket>();
  private lastActivity = 0;
  private exited = false;

  constructor(ring: LogRing) {
    ring.onLine((line) => this.send({ t: 'log', ...line }));
  }

  /** Takes over the request's socket for the stream. */
  attach(socket: Socket): void {
    socket.write(HEAD);
    this.streams.add(socket);
    socket.on('close', () => this.streams.delete(socket));
  }

  activity(): void {
    const now = Date.now();
    if (now - this.lastActivity < ACTIVITY_EVERY_MS) return;
    this.lastActivity = now;
    this.send({ t: 'activity', at: new Date(now).toISOString() });
  }

  /** The app is gone: the last event, written synchronously, then the streams end. */
  exit(report: ExitReport): void {
    if (this.exited) return;
    this.exited = true;
    const line = `${JSON.stringify({ t: 'exit', ...report } satisfies PodEvent)}\n`;
    for (const socket of this.streams) {
      const fd = (socket as unknown as { _handle?: { fd?: number } })._handle?.fd;
      try {
        if (fd !== undefined && fd >= 0 && socket.writableLength === 0) writeSync(fd, line);
        else socket.write(line);
      } catch (err) {
        // A full socket buffer (EAGAIN) or a peer already gone: the control plane sees the
        // stream end without an exit and reports the pod gone, with the lines it already has.
        process.stderr.write(`[slipway] exit event not delivered: ${String(err)}\n`);
      }
      socket.end();
    }
  }

  private send(event: PodEvent): void {
    const line = `${JSON.stringify(event)}\n`;
    for (const socket of this.streams) {
      if (socket.writableLength > MAX_BUFFERED) socket.destroy();
      else socket.write(line);
    }
  }
}

export type PodEvent =
  ({ t: 'log' } & RingLine) | { t: 'activity'; at: string } | ({ t: 'exit' } & ExitReport);
