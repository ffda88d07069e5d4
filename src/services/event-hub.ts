/**
 * Fans the app actors' lifecycle events out to the dashboard streams (/api/events): each client
 * gets only the events of apps it may see (its own; every app for admins, and for everyone when
 * auth is disabled, since then every caller is admin). Another owner's app never shows up, not even
 * its deletion (design.md §7).
 */
import type { AppEvent, AppRegistry } from '../actors/registry.js';
import { isAdmin, type Identity } from '../auth/identity.js';
import type { Log } from '../logging.js';

export type EventSink = (event: AppEvent) => void;

interface Client {
  identity: Identity;
  sink: EventSink;
}

export class EventHub {
  private readonly clients = new Set<Client>();
  private unsubscribe: (() => void) | undefined;

  constructor(
    private readonly registry: Pick<AppRegistry, 'on'>,
    private readonly log: Log = () => undefined,
  ) {}

  /** Subscribes to the registry on the first client, so an unused hub costs nothing. */
  add(identity: Identity, sink: EventSink): () => void {
    const client: Client = { identity, sink };
    this.clients.add(client);
    this.unsubscribe ??= this.registry.on((event) => this.fanOut(event));
    return () => {
      this.clients.delete(client);
      if (this.clients.size === 0) this.stop();
    };
  }

  get size(): number {
    return this.clients.size;
  }

  stop(): void {
    this.unsubscribe?.();
    this.unsubscribe = undefined;
  }

  private fanOut(event: AppEvent): void {
    // A copy: a sink may remove its client (a dropped stream) while we go round.
    for (const client of [...this.clients]) {
      if (!maySee(client.identity, event)) continue;
      try {
        client.sink(event);
      } catch (err) {
        // One broken client must not keep the event from the others.
        this.clients.delete(client);
        this.log('error', 'event stream client failed; dropped', { err });
      }
    }
  }
}

export const maySee = (identity: Identity, event: AppEvent): boolean =>
  isAdmin(identity) || event.owner === identity.userId;
