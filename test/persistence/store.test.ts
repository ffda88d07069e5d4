import { join } from 'node:path';
import { afterEach, beforeEach, describe } from 'vitest';
import { createMemoryStore } from '../../src/persistence/memory-store.js';
import { openSqliteStore } from '../../src/persistence/sqlite-store.js';
import type { Store } from '../../src/persistence/store.js';
import { recordCases } from './contract-records.js';
import { trailCases } from './contract-trail.js';
import { tempDir } from './fixtures.js';

/** Opens a fresh store and returns it with its cleanup. */
type Factory = () => { store: Store; cleanup: () => void };

const backends: [string, Factory][] = [
  [
    'sqlite',
    () => {
      const tmp = tempDir();
      const store = openSqliteStore(join(tmp.dir, 'slipway.db'));
      return {
        store,
        cleanup: () => {
          store.close();
          tmp.cleanup();
        },
      };
    },
  ],
  ['memory', () => ({ store: createMemoryStore(), cleanup: () => undefined })],
];

// One contract, both backends: code tested against memory must behave the same on SQLite.
describe.each(backends)('store contract: %s', (_name, open) => {
  let current: ReturnType<Factory> | undefined;
  beforeEach(() => {
    current = open();
  });
  afterEach(() => {
    current?.cleanup();
    current = undefined;
  });
  const store = (): Store => {
    if (current === undefined) throw new Error('store used outside a test');
    return current.store;
  };

  recordCases(store);
  trailCases(store);
});
