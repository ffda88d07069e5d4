import { useEffect, useRef, useState } from 'preact/hooks';
import { api, errorText } from './api';
import { onAppEvent } from './events';
import type { AppView } from './types';

export interface AppsState {
  apps: AppView[];
  loading: boolean;
  error?: string;
}

/**
 * The caller's apps (all of them for an admin), kept current by the event stream: a phase event
 * updates its row in place; an app the list does not know yet (deployed elsewhere) or one that
 * became Ready reloads the list, which carries the URL and deploy the event does not.
 */
export function useApps(): AppsState {
  const [state, setState] = useState<AppsState>({ apps: [], loading: true });
  const current = useRef<AppView[]>([]);
  useEffect(() => {
    let alive = true;
    const show = (next: AppsState) => {
      current.current = next.apps;
      if (alive) setState(next);
    };
    const load = () =>
      api<{ items: AppView[] }>('/v1/apps')
        .then((page) => show({ apps: page.items, loading: false }))
        .catch((err: unknown) =>
          show({ apps: current.current, loading: false, error: errorText(err) }),
        );
    void load();
    const stop = onAppEvent((event) => {
      const apps = current.current;
      if (event.kind === 'delete' || event.phase === 'Deleted') {
        show({ apps: apps.filter((a) => a.app_id !== event.app_id), loading: false });
        return;
      }
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
    return () => {
      alive = false;
      stop();
    };
  }, []);
  return state;
}
