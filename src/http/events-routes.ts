import type { FastifyInstance } from 'fastify';
import type { AppRegistry } from '../actors/registry.js';
import { requireIdentity } from '../auth/guards.js';
import { EventHub } from '../services/event-hub.js';
import { HEARTBEAT_MS, MAX_BUFFERED_BYTES, SseStream } from './sse.js';

/**
 * `/api/events` (spec §4 Other /api routes, §6): the dashboard's SSE stream of app lifecycle
 * events, `event: app` frames whose data is the AppEvent, kept open until the client goes.
 */
export function eventsRoutes(
  registry: Pick<AppRegistry, 'on'>,
  opts: { heartbeatMs?: number } = {},
) {
  return async function routes(app: FastifyInstance): Promise<void> {
    const hub = new EventHub(registry, (level, msg, extra) => app.log[level](extra ?? {}, msg));
    const open = new Set<SseStream>();

    // Before the listener closes its connections: a clean end, so clients reconnect rather than err.
    app.addHook('preClose', async () => {
      for (const stream of [...open]) stream.end();
      hub.stop();
    });

    app.get('/api/events', async (request, reply) => {
      const identity = requireIdentity(request);
      reply.hijack();
      let remove = (): void => undefined;
      const stream = new SseStream(request.raw, reply.raw, {
        heartbeatMs: opts.heartbeatMs ?? HEARTBEAT_MS,
        maxBufferedBytes: MAX_BUFFERED_BYTES,
        onClose: () => {
          open.delete(stream);
          remove();
        },
      });
      open.add(stream);
      remove = hub.add(identity, (event) => void stream.send(JSON.stringify(event), 'app'));
      stream.comment('connected');
    });
  };
}
