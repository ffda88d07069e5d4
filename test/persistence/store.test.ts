import { join } from 'node:path';
import { describe } from 'vitest';
import { createMemoryStore } from '../../src/persistence/memory-store.js';
import { openSqliteStore } from '../../src/persistence/sqlite-store.js';
import { tempDir } from './fixtures.js';
import { storeContract, type OpenStore } from './store-contract.js';

const backends: [string, OpenStore][] = [
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

// One contract for every backend; the configmap backend runs it on the test cluster
// (test/k8s/configmap-store.k8s.ts).
describe.each(backends)('store contract: %s', (_name, open) => storeContract(open));
