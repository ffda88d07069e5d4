import { logLineText, SNAPSHOT_LINES, type AppLogLine } from '../actors/log-ring.js';
import type { JsonSchemaToTsProvider } from '@fastify/type-provider-json-schema-to-ts';
import type { FastifyInstance } from 'fastify';
import type { AppRegistry } from '../actors/registry.js';
import { requireIdentity } from '../auth/guards.js';
import type { AppService } from '../services/app-service.js';
import * as api from './api-schemas.js';
import { SHUTTING_DOWN, type Drain } from './drain.js';
import { HEARTBEAT_MS, MAX_BUFFERED_BYTES, SseStream } from './sse.js';
import { StreamQuota, type StreamCap } from './stream-quota.js';

export interface LogsRoutesOptions {
  /** `limits.maxConcurrentLogStreamsPerUser`; <= 0 means the default of 10. */
  maxStreamsPerUser: number;
  /** The server-wide cap on streams (`limits.maxStreams`), shared with /api/events. */
  cap?: StreamCap;
  heartbeatMs?: number;
  /** The server's drain: followers end with `event: error` as soon as it starts. */
  drain?: Pick<Drain, 'onBegin'>;
}

/**
 * `GET /v1/apps/{id}/logs` (spec §4): SSE, one event per line, `data: <ISO time> <text>`, with the
 * version that printed it (or that Slipway's note is about) as the event's `id:`; `version=N` keeps
 * only that version's lines. By
 * default the last 200 lines and the stream ends; `follow=true` goes on with new lines. Ownership
 * and the per-user cap are checked before the stream opens, so 404 and 429 are plain JSON answers.
 */
export function logsRoutes(service: AppService, registry: AppRegistry, opts: LogsRoutesOptions) {
  return async function routes(fastify: FastifyInstance): Promise<void> {
    const app = fastify.withTypeProvider<JsonSchemaToTsProvider>();
    const quota = new StreamQuota(opts.maxStreamsPerUser, { cap: opts.cap });
    const open = new Set<SseStream>();

    // A follower never ends on its own: at the start of a drain it ends, saying why, so that the
    // drain waits only for requests that do end (and on a close without a drain, all the same).
    const endAll = (): void => {
      for (const stream of [...open]) stream.fail(SHUTTING_DOWN);
    };
    opts.drain?.onBegin(endAll);
    app.addHook('preClose', async () => endAll());

    app.get('/v1/apps/:id/logs', { schema: api.streamAppLogs }, async (request, reply) => {
      const identity = requireIdentity(request);
      const { id } = request.params;
      service.get(identity, id);
      const release = quota.acquire(identity.userId);
      const { version, follow } = request.query;
      const snapshot = registry.logs(id, version).slice(-SNAPSHOT_LINES);
      reply.hijack();
      let unfollow = (): void => undefined;
      const stream = new SseStream(request.raw, reply.raw, {
        heartbeatMs: opts.heartbeatMs ?? HEARTBEAT_MS,
        // The snapshot is sent at once and is bounded (200 lines of at most 16 KiB): it may sit
        // in the buffer whole; only a follower falling behind beyond that is dropped.
        maxBufferedBytes: MAX_BUFFERED_BYTES + bytesOf(snapshot.map(logLineText)),
        // However it ends (done, client gone, dropped, failed): slot and subscription go.
        onClose: () => {
          open.delete(stream);
          unfollow();
          release();
        },
      });
      open.add(stream);
      const send = (line: AppLogLine): boolean =>
        stream.send(logLineText(line), undefined, String(line.version));
      for (const line of snapshot) send(line);
      if (!follow) return stream.end();
      unfollow = registry.followLogs(id, {
        line: (line) => {
          if (version === undefined || line.version === version) send(line);
        },
        end: (reason) => stream.fail(reason),
      });
      // Dropped while the snapshot was written: onClose ran before there was anything to undo.
      if (stream.closed) unfollow();
    });
  };
}

/** Bytes of the frames the lines make (`id: <version>`, `data: `, the line, newlines). */
const bytesOf = (lines: string[]): number =>
  lines.reduce((sum, line) => sum + Buffer.byteLength(line) + 24, 0);

/** The same line format as the MCP logs tool: `<ISO 8601 time> <text>`. */
