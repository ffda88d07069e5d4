/** Fan-out of app lifecycle events to SSE, audit and metrics: a bad listener never hurts the rest. */
import type { Initiator } from '../machines/app-machine.js';
import type { Phase } from '../persistence/store.js';
import type { Log } from '../logging.js';
import { errorMessage, type AppEvent, type AppEventListener } from './types.js';

export class AppEventBus {
  private readonly listeners = new Set<AppEventListener>();

  constructor(private readonly log: Log) {}

  on(listener: AppEventListener): () => void {
    this.listeners.add(listener);
    return () => void this.listeners.delete(listener);
  }

  publish(event: AppEvent): void {
    for (const listener of this.listeners) {
      try {
        listener(event);
      } catch (err) {
        const extra = { kind: event.kind, app: event.app_id, err: errorMessage(err) };
        this.log('error', 'app event listener failed', extra);
      }
    }
  }
}

export interface EventFacts {
  appId: string;
  owner: string;
  phase: Phase | 'Deleted';
  version: number;
  reason: string;
  message: string;
}

export function lifecycleEvent(
  kind: AppEvent['kind'],
  facts: EventFacts,
  initiator: Initiator,
  now: number,
): AppEvent {
  const deleted = facts.phase === 'Deleted';
  return {
    kind,
    app_id: facts.appId,
    owner: facts.owner,
    phase: facts.phase,
    version: facts.version,
    reason: deleted ? 'Deleted' : facts.reason,
    message: deleted ? 'app deleted' : facts.message,
    time: new Date(now).toISOString(),
    initiator,
  };
}
