import type { AppPolicy } from '../machines/app-machine.js';
import type { AppEvent } from '../app-event.js';
import type { Store } from '../persistence/store.js';
import type { WriteRetry } from '../persistence/write-retry.js';
import type { Log } from '../logging.js';
import type { Runtime } from '../runtime/runtime.js';
import type { SourceStore } from '../sources/source-store.js';
import type { WarmKeepOptions } from './warm-keep.js';
import type { StageClock } from '../stage-clock.js';

export type { AppEvent };

export type AppEventListener = (event: AppEvent) => void;

export interface RegistryDeps {
  store: Store;
  runtime: Runtime;
  sourceStore: SourceStore;
  appUrl: (name: string) => string;
  now?: () => number;
  /** Spreads claim retries (0 ≤ x < 1; default Math.random); undefined: no spread (tests). */
  jitter?: () => number | undefined;
  log?: Log;
  /** How long deploy/resume/route wait for Ready by default. */
  deployWaitMs?: number;
  /** Retry and restart budgets; tests shorten them. */
  policy?: Partial<AppPolicy>;
  /** Retired sandboxes kept warm for rollbacks; omitted: none kept (retired means reaped). */
  keepRetired?: WarmKeepOptions;
  /** Retries row and outcome writes the store refused; one of its own when omitted. */
  writes?: WriteRetry;
  /** Cold starts a restart owes that may be under way at once (runtime.restoreConcurrency). */
  restoreConcurrency?: number;
  /** How often the apps' last-use times reach the store (default 30 s; 0: only at stop). */
  lastUseFlushMs?: number;
}

export interface WaitOptions {
  waitMs?: number;
  /** Times the start's stages (claim, inject, ...) for the caller's Server-Timing header. */
  clock?: StageClock;
}

/** A console logger for when the server gives none: errors must never vanish silently. */
export const consoleLog: Log = (level, msg, extra) => {
  const line = extra ? `${msg} ${JSON.stringify(extra, errorJson)}` : msg;
  if (level === 'info') console.log(line);
  else console.error(`[${level}] ${line}`);
};

function errorJson(_key: string, value: unknown): unknown {
  return value instanceof Error ? { name: value.name, message: value.message } : value;
}

export function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
