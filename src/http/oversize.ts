import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import type { IncomingMessage } from 'node:http';
import { PassThrough } from 'node:stream';

/** How long a refused upload's remaining body is read before the connection is cut. */
const DRAIN_MAX_MS = 30_000;

/**
 * A 413 that the client never reads is no answer. Answering while the client still sends its body
 * and then closing (what Node does after `Connection: close`) resets the connection with unread
 * bytes in the kernel's buffer, and the reset can discard the 413 before the client reads it. So
 * the body is sent at once but the response ends only once the rest of the request has been read
 * and discarded, up to `maxDrainBytes` and DRAIN_MAX_MS; then the connection closes gracefully.
 * Beyond those bounds (or a declared length beyond them) it is cut as before.
 */
export function oversizePlugin(opts: {
  maxDrainBytes: number;
  /** The header that makes the front door end the visitor's connection too (drain.ts). */
  closeMark: () => string | undefined;
}) {
  async function plugin(app: FastifyInstance): Promise<void> {
    // A callback hook: every answer passes here, and only a 413 needs anything done.
    app.addHook('onSend', (request, reply, payload, done) => {
      const req = request.raw;
      if (reply.statusCode !== 413 || req.complete || req.destroyed) return done(null, payload);
      if (typeof payload !== 'string' && !Buffer.isBuffer(payload)) return done(null, payload);
      if (Number(req.headers['content-length'] ?? 0) > opts.maxDrainBytes) {
        return done(null, payload);
      }
      void reply.header('connection', 'close');
      const mark = opts.closeMark();
      if (mark) void reply.header(mark, '1');
      void reply.header('content-length', String(Buffer.byteLength(payload)));
      const out = new PassThrough();
      out.write(payload);
      drain(req, opts.maxDrainBytes, (drained) => {
        if (drained) out.end();
        else req.socket.destroy();
      });
      done(null, out);
    });
  }
  // Not encapsulated: the hook must see every route's 413, the body parser's included.
  return fp(plugin, { name: 'slipway-oversize' });
}

/** Reads and discards what is left of `req`; `done(true)` once it ended, `done(false)` past a bound. */
function drain(req: IncomingMessage, maxBytes: number, done: (drained: boolean) => void): void {
  let seen = 0;
  let settled = false;
  const finish = (drained: boolean): void => {
    if (settled) return;
    settled = true;
    clearTimeout(timer);
    req.off('data', onData);
    done(drained);
  };
  const onData = (chunk: Buffer): void => {
    seen += chunk.length;
    if (seen > maxBytes) finish(false);
  };
  const timer = setTimeout(() => finish(false), DRAIN_MAX_MS);
  timer.unref();
  // The body parser (or busboy) that gave up must not pause the stream again by backpressure.
  req.unpipe();
  req.on('data', onData);
  req.once('end', () => finish(true));
  // The client went away: nothing left to read, and nobody to answer.
  req.once('close', () => finish(req.complete));
  req.resume();
}
