import { afterEach, beforeEach } from 'vitest';
import type { Store } from '../../src/persistence/store.js';
import { recordCases } from './contract-records.js';
import { trailCases } from './contract-trail.js';

/** Opens a fresh, empty store and returns it with its cleanup. */
export type OpenStore = () => Promise<OpenedStore> | OpenedStore;
export interface OpenedStore {
  store: Store;
  /** Runs after each case, with the case's store (possibly closed by the case). */
  cleanup: () => Promise<void> | void;
}

/**
 * The one store contract, as the body of a `describe`: every backend (memory and sqlite in
 * store.test.ts, configmap on the test cluster in test/k8s/configmap-store.k8s.ts) runs the same
 * cases, each on a fresh store, so code tested against one behaves the same on the others.
 */
export function storeContract(open: OpenStore): void {
  let current: OpenedStore | undefined;
  beforeEach(async () => {
    current = await open();
  });
  afterEach(async () => {
    const opened = current;
    current = undefined;
    await opened?.cleanup();
  });
  const store = (): Store => {
    if (current === undefined) throw new Error('store used outside a test');
    return current.store;
  };

  recordCases(store);
  trailCases(store);
}
