import { Reconnect } from './reconnect';
import { readSse } from './sse';
import type { AppEvent } from './types';

type Listener = (event: AppEvent) => void;
type StatusListener = (live: boolean) => void;
type ResyncListener = () => void;

const listeners = new Set<Listener>();
const statusListeners = new Set<StatusListener>();
const resyncListeners = new Set<ResyncListener>();

/** Subscribes to app lifecycle events; returns the unsubscribe. */
export function onAppEvent(listener: Listener): () => void {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

/** Whether the event stream is connected (the header shows it). */
export function onLiveStatus(listener: StatusListener): () => void {
  statusListeners.add(listener);
  return () => statusListeners.delete(listener);
}

/**
 * Called each time the stream opens, the first time too: events sent before it (while it was down,
 * or before the first connection) are lost, so what was built from them (the apps list) is to be
 * read afresh. Returns the unsubscribe.
 */
export function onResync(listener: ResyncListener): () => void {
  resyncListeners.add(listener);
  return () => resyncListeners.delete(listener);
}

/**
 * Keeps one `/api/events` stream open for the signed-in tab, reconnecting (`Reconnect`) after the
 * server ends it or the network drops. Returns the stop.
 */
export function startEvents(): () => void {
  const abort = new AbortController();
  const reconnect = new Reconnect();
  const status = (live: boolean) => statusListeners.forEach((l) => l(live));
  const loop = async (): Promise<void> => {
    while (!abort.signal.aborted) {
      try {
        await readSse(
          '/api/events',
          (message) => {
            if (message.event !== 'app') return;
            const event = JSON.parse(message.data) as AppEvent;
            listeners.forEach((l) => l(event));
          },
          abort.signal,
          () => {
            reconnect.opened();
            status(true);
            resyncListeners.forEach((l) => l());
          },
        );
      } catch (err) {
        if (abort.signal.aborted) return;
        console.warn('event stream interrupted', err);
      }
      status(false);
      if (abort.signal.aborted) return;
      await new Promise((r) => setTimeout(r, reconnect.delay()));
    }
  };
  status(true);
  void loop();
  return () => abort.abort();
}
