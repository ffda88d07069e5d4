import type { FastifyInstance } from 'fastify';
import type { AppRegistry } from '../actors/registry.js';
import { requireIdentity } from '../auth/guards.js';
import { EventHub } from '../services/event-hub.js';
import { SHUTTING_DOWN, type Drain } from './drain.js';
import { HEARTBEAT_MS, MAX_BUFFERED_BYTES, SseStream } from './sse.js';
import { StreamQuota, type StreamCap } from './stream-quota.js';

export interface EventsRoutesOptions {
  /** `limits.maxConcurrentLogStreamsPerUser`: the same per-user bound; unset/<= 0: default. */
  maxStreamsPerUser?: number;
  /** The server-wide cap on streams (`limits.maxStreams`), shared with log streams. */
  cap?: StreamCap;
  heartbeatMs?: number;
  /** The server's drain: streams end with `event: error` as soon as it starts. */
  drain?: Pick<Drain, 'onBegin'>;
}

/**
 * `/api/events` (spec §4 Other /api routes, §6): the dashboard's SSE stream of app lifecycle
 * events, `event: app` frames whose data is the AppEvent, kept open until the client goes. Each
 * stream holds a socket until then, so they are capped per user and server-wide: past either cap
 * the answer is a plain JSON 429 `too_many_streams` with Retry-After.
 */
export function eventsRoutes(registry: Pick<AppRegistry, 'on'>, opts: EventsRoutesOptions = {}) {
  return async function routes(app: FastifyInstance): Promise<void> {
    const hub = new EventHub(registry, (level, msg, extra) => app.log[level](extra ?? {}, msg));
    const open = new Set<SseStream>();
    const quota = new StreamQuota(opts.maxStreamsPerUser ?? 0, {
      code: 'too_many_streams',
      what: 'event streams',
      cap: opts.cap,
    });

    // At the start of a drain (or a close without one), before the listener closes its
    // connections: an `event: error` frame saying the server is going, rather than a cut the client
    // cannot tell from a network fault.
    const endAll = (): void => {
      for (const stream of [...open]) stream.fail(SHUTTING_DOWN);
    };
    opts.drain?.onBegin(endAll);
    app.addHook('preClose', async () => {
      endAll();
      hub.stop();
    });

    app.get('/api/events', async (request, reply) => {
      const identity = requireIdentity(request);
      const release = quota.acquire(identity.userId);
      reply.hijack();
      let remove = (): void => undefined;
      const stream = new SseStream(request.raw, reply.raw, {
        heartbeatMs: opts.heartbeatMs ?? HEARTBEAT_MS,
        maxBufferedBytes: MAX_BUFFERED_BYTES,
        onClose: () => {
          open.delete(stream);
          remove();
          release();
        },
      });
      open.add(stream);
      remove = hub.add(identity, (event) => void stream.send(JSON.stringify(event), 'app'));
      stream.comment('connected');
    });
  };
}
