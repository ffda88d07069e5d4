import type { StorageHealth } from './storage-health.js';
import type { Store } from './store.js';

/** The Store methods that write; a failure in one is a storage fault, not a 500. */
const WRITES: ReadonlySet<string> = new Set<keyof Store>([
  'transaction',
  'putApp',
  'putMachineState',
  'deleteApp',
  'addVersion',
  'setVersionOutcome',
  'pruneVersions',
  'ensureUser',
  'putUser',
  'deleteUser',
  'putDepartment',
  'deleteDepartment',
  'addShareLink',
  'revokeShareLink',
  'appendAudit',
  'setMeta',
  'syncWritten',
]);

/**
 * The store every service writes through: a write that hits a full or read-only disk throws
 * `503 storage_unavailable` (naming the database) and marks the database down in `health`; one
 * that goes through marks it up. Reads pass straight on. SQLite rolls a failed transaction back, so
 * nothing is left half-written.
 */
export function guardStore(store: Store, health: StorageHealth): Store {
  return new Proxy(store, {
    get(target, property, receiver) {
      const value: unknown = Reflect.get(target, property, receiver);
      if (typeof value !== 'function' || typeof property !== 'string' || !WRITES.has(property)) {
        return value;
      }
      const write = value as (...args: unknown[]) => unknown;
      return (...args: unknown[]): unknown => {
        let result: unknown;
        try {
          result = write.apply(target, args);
        } catch (err) {
          throw health.failed('database', err);
        }
        health.succeeded('database');
        return result;
      };
    },
  });
}
