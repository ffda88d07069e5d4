import { LRUCache } from 'lru-cache';
import type { AppSummary } from './store.js';

/**
 * The views' reading of an app row (`getAppSummary`), kept between reads: `GET /v1/apps/{id}` is
 * the API's most frequent request, and the query with its JSON costs more than the rest of the
 * request's own work. An entry holds env names only (no value) and goes as soon as the row is
 * written or deleted, or when a transaction fails (whatever it read inside may be rolled back);
 * only this process writes the database (one server per data dir). Who may see the app is not
 * part of it: the caller's access is checked against the owner on every request.
 */
export class SummaryCache {
  private readonly lru: LRUCache<string, AppSummary>;

  constructor(max = 1_000) {
    this.lru = new LRUCache<string, AppSummary>({ max });
  }

  /** The cached summary, or `read()`'s, remembered; frozen, since every caller shares it. */
  get(id: string, read: () => AppSummary | undefined): AppSummary | undefined {
    const known = this.lru.get(id);
    if (known) return known;
    const summary = read();
    if (summary) this.lru.set(id, freeze(summary));
    return summary;
  }

  /** The app's row changed: its next read goes to the database. */
  forget(id: string): void {
    this.lru.delete(id);
  }

  clear(): void {
    this.lru.clear();
  }
}

function freeze<T extends object>(value: T): T {
  for (const inner of Object.values(value)) {
    if (typeof inner === 'object' && inner !== null) freeze(inner as object);
  }
  return Object.freeze(value);
}
