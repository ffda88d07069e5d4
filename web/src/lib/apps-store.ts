import { useEffect, useRef, useState } from 'preact/hooks';
import { api, errorText } from './api';
import { onAppEvent, onResync } from './events';
import type { AppView } from './types';

export interface AppsState {
  apps: AppView[];
  loading: boolean;
  error?: string;
}

/**
 * The caller's apps (all of them for an admin), kept current by the event stream: a phase event
 * updates its row in place; an app the list does not know yet (deployed elsewhere) or one that
 * became Ready reloads the list, which carries the URL and deploy the event does not. A list that
 * was asked for before the latest event is stale when it arrives, so it is asked for again. The
 * delete event can come before the list stops showing the app, so a deleted app stays hidden
 * until a deploy event brings the name back. Events the stream could not carry (before it opened,
 * or while it reconnected) are made up for by reading the list again each time it opens.
 */
export function useApps(): AppsState {
  const [state, setState] = useState<AppsState>({ apps: [], loading: true });
  const current = useRef<AppView[]>([]);
  useEffect(() => {
    let alive = true;
    let eventsSeen = 0;
    const deleted = new Set<string>();
    const show = (next: AppsState) => {
      current.current = next.apps.filter((a) => !deleted.has(a.app_id));
      if (alive) setState({ ...next, apps: current.current });
    };
    const load = async (): Promise<void> => {
      const asked = eventsSeen;
      try {
        const page = await api<{ items: AppView[] }>('/v1/apps');
        if (!alive) return;
        if (asked !== eventsSeen) return load();
        show({ apps: page.items, loading: false });
      } catch (err) {
        show({ apps: current.current, loading: false, error: errorText(err) });
      }
    };
    void load();
    const stop = onAppEvent((event) => {
      eventsSeen += 1;
      const apps = current.current;
      if (event.kind === 'delete' || event.phase === 'Deleted') {
        deleted.add(event.app_id);
        show({ apps: apps.filter((a) => a.app_id !== event.app_id), loading: false });
        return;
      }
      if (event.kind === 'deploy') deleted.delete(event.app_id);
      const phase = event.phase;
      const known = apps.some((a) => a.app_id === event.app_id);
      const updated = apps.map((a) =>
        a.app_id === event.app_id
          ? { ...a, phase, reason: event.reason, message: event.message }
          : a,
      );
      show({ apps: updated, loading: false });
      if (!known || phase === 'Ready') void load();
    });
    const stopResync = onResync(() => {
      eventsSeen += 1;
      void load();
    });
    return () => {
      alive = false;
      stop();
      stopResync();
    };
  }, []);
  return state;
}
