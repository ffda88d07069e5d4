import { spread } from '../backoff.js';
import { AppError } from '../errors.js';
import { asStorageUnavailable } from '../persistence/storage-faults.js';
import type { Store, UserRecord } from '../persistence/store.js';
import type { Principal } from './auth-mode.js';

export interface ProvisionOptions {
  /** How long to keep retrying a failing store before answering 503. */
  budgetMs?: number;
  onRetry?: (err: unknown, attempt: number) => void;
  sleep?: (ms: number) => Promise<void>;
  /** Draws each wait's jitter (backoff.ts); tests fix it. */
  random?: () => number;
}

/**
 * The principal's user record, created from the principal on first authentication. A failing store
 * is retried with jittered exponential backoff for about two seconds; after that the request gets
 * 503 (`storage_unavailable` naming the database for a storage fault such as a full disk, else
 * `not_ready`) and the next request starts over, so provisioning is retried until it succeeds.
 */
export async function loadOrProvision(
  store: Store,
  principal: Principal,
  options: ProvisionOptions = {},
): Promise<UserRecord> {
  const budget = options.budgetMs ?? 2000;
  const sleep = options.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
  const started = Date.now();
  const random = options.random ?? Math.random;
  let delay = 25;
  for (let attempt = 1; ; attempt += 1) {
    try {
      return store.getUser(principal.userId) ?? store.ensureUser(seedRecord(principal));
    } catch (err) {
      options.onRetry?.(err, attempt);
      const left = budget - (Date.now() - started);
      if (left <= 0) {
        throw (
          asStorageUnavailable(err) ??
          new AppError(503, 'not_ready', 'the user store is not available; try again')
        );
      }
      await sleep(Math.min(spread(delay, random()), left));
      delay *= 2;
    }
  }
}

function seedRecord(principal: Principal): UserRecord {
  const now = new Date().toISOString();
  return {
    id: principal.userId,
    name: principal.name,
    ...(principal.email ? { email: principal.email } : {}),
    role: principal.role,
    status: 'active',
    ...(principal.department ? { department: principal.department } : {}),
    createdAt: now,
    updatedAt: now,
  };
}
