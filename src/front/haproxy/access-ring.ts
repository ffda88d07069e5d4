import net from 'node:net';
import type { ServedRequest } from '../../services/direct-routes.js';

/** The ring HAProxy writes the direct path's access lines to, when the log level is debug. */
export const ACCESS_RING = 'access';
/**
 * Its bounds, HAProxy's to keep: at most this much memory, whoever reads it (a reader that falls
 * behind misses lines; nothing waits, nothing grows, nothing goes to disk), and lines this long.
 */
export const ACCESS_RING_BYTES = 1024 * 1024;
export const ACCESS_LINE_BYTES = 2048;
/** The fields of a line, in this order, the path last (HAProxy's log-format of the frontend). */
export const ACCESS_FORMAT = '%b %ST %Ta %HM %[var(txn.host)] %HPO';

/** One request HAProxy carried straight to an app, with the host it asked for (lower-case). */
export type RingLine = ServedRequest & { host: string };

/** After the runtime API closed the reading (idle timeout, a reload), reading resumes after this. */
const RECONNECT_MS = 1_000;

/**
 * Follows the access ring on HAProxy's runtime API (`show events access -w -n`: new lines, as they
 * come) and hands each direct request's line to `served`. The connection ends when it idles past
 * the API's timeout or the proxy reloads; the reading then starts again. Lines of other backends
 * (the control plane logs its own) and lines that do not parse are skipped; a line longer than the
 * ring's own bound is dropped, so a broken peer cannot make the buffer grow either.
 */
export function followAccessRing(
  admin: string,
  served: (request: RingLine) => void,
  onError: (err: Error) => void,
): { stop(): void } {
  let stopped = false;
  let conn: net.Socket | undefined;
  let timer: NodeJS.Timeout | undefined;
  let failing = false;
  const open = (): void => {
    let partial = '';
    // Past an overlong line's start: the rest of it, up to its newline, is no line of its own.
    let skipping = false;
    const socket = net.connect(admin);
    conn = socket;
    socket.setEncoding('utf8');
    socket.on('connect', () => {
      failing = false;
      socket.write(`show events ${ACCESS_RING} -w -n\n`);
    });
    socket.on('data', (chunk: string) => {
      const lines = (partial + chunk).split('\n');
      partial = lines.pop() ?? '';
      for (const line of lines) {
        const overlong = skipping || line.length > ACCESS_LINE_BYTES;
        skipping = false;
        const request = overlong ? undefined : parseAccessLine(line);
        if (request) served(request);
      }
      if (partial.length > ACCESS_LINE_BYTES) {
        partial = '';
        skipping = true;
      }
    });
    socket.on('error', (err) => {
      // Said once per outage: a proxy that is away (a restart) is retried every second.
      if (!failing) onError(err);
      failing = true;
    });
    socket.on('close', () => {
      if (stopped) return;
      timer = setTimeout(open, RECONNECT_MS);
      timer.unref();
    });
  };
  open();
  return {
    stop() {
      stopped = true;
      clearTimeout(timer);
      conn?.destroy();
    },
  };
}

const LINE = /^slot_\d+ (-?\d+) (-?\d+) ([A-Z]+) (\S+) (\/\S*)$/;

/** A direct request's line, or undefined for anything else. */
export function parseAccessLine(line: string): RingLine | undefined {
  const match = LINE.exec(line);
  if (!match) return undefined;
  const [, status, ms, method, host, path] = match as unknown as [
    string,
    string,
    string,
    string,
    string,
    string,
  ];
  return { host, method, path, status: Number(status), ms: Number(ms) };
}
